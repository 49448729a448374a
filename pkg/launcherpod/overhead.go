package launcherpod

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// The parts of a guest's overhead that grow with what the guest has. A launcher pod whose
// memory limit is below what QEMU really uses has its guest OOM-killed, so each term errs on
// the safe side; together they are at least what KubeVirt's estimate adds for the same guest
// beside its fixed part.
var (
	// overheadPerVCPU is a vCPU thread's stack and QEMU's state for it.
	overheadPerVCPU = resource.MustParse("8Mi")
	// overheadIOThread is QEMU's main loop and I/O thread.
	overheadIOThread = resource.MustParse("8Mi")
	// overheadGraphics is the VGA device's 16 MiB of video memory and the VNC server's copy
	// of the screen.
	overheadGraphics = resource.MustParse("32Mi")
	// overheadEFI is OVMF's code and variable flash images, which QEMU maps.
	overheadEFI = resource.MustParse("8Mi")
	// overheadTPM is the swtpm process beside QEMU.
	overheadTPM = resource.MustParse("53Mi")
	// overheadHardLimit is a margin for a pod with a memory limit: there, and only there, an
	// underestimate kills the guest rather than costing the node a little memory.
	overheadHardLimit = resource.MustParse("100Mi")
)

// pageTableDivisor: QEMU and the host kernel need about one byte of page tables for every
// 512 bytes of guest memory.
const pageTableDivisor = 512

// MemoryOverhead is what the launcher pod of vmi needs beside the guest's memory of size
// guest: base (the launcher, libvirtd and QEMU of a small guest, the cluster's
// memoryOverhead) and what grows with the guest: page tables for its memory, each vCPU, the
// graphics device, EFI firmware, a TPM, and a margin when the pod has a memory limit.
func MemoryOverhead(vmi *v1.VirtualMachineInstance, guest, base resource.Quantity) resource.Quantity {
	domain := &vmi.Spec.Domain
	overhead := base.DeepCopy()

	pageTables := (guest.Value() + pageTableDivisor - 1) / pageTableDivisor
	overhead.Add(*resource.NewQuantity(pageTables, resource.BinarySI))

	// Validation bounds the vCPUs (bounds.go); the min keeps an unvalidated spec from overflowing.
	vcpus := min(domain.VCPUs(), math.MaxInt32)
	overhead.Add(*resource.NewQuantity(overheadPerVCPU.Value()*vcpus, resource.BinarySI))
	overhead.Add(overheadIOThread)

	if a := domain.Devices.AutoattachGraphicsDevice; a == nil || *a {
		overhead.Add(overheadGraphics)
	}
	if fw := domain.Firmware; fw != nil && fw.Bootloader != nil && fw.Bootloader.EFI != nil {
		overhead.Add(overheadEFI)
	}
	if tpm := domain.Devices.TPM; tpm != nil && (tpm.Enabled == nil || *tpm.Enabled) {
		overhead.Add(overheadTPM)
	}
	if _, limited := domain.Resources.Limits[corev1.ResourceMemory]; limited {
		overhead.Add(overheadHardLimit)
	}
	// Whole MiB, rounded up, keep the pod's figures readable.
	mib := (overhead.Value() + 1<<20 - 1) >> 20
	return *resource.NewQuantity(mib<<20, resource.BinarySI)
}
