package launcherpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestMemoryOverhead(t *testing.T) {
	base := q("180Mi")
	tests := []struct {
		name  string
		vmi   func(*v1.VirtualMachineInstance)
		guest string
		want  string
	}{
		// 180 + 0.25 (page tables) + 8 (a vCPU) + 8 (I/O thread) + 32 (graphics), rounded up.
		{name: "a small guest with graphics", guest: "128Mi", want: "229Mi"},
		{name: "no graphics device", guest: "128Mi", want: "197Mi",
			vmi: func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false) }},
		// 180 + 8 (page tables) + 4 × 8 + 8 + 32.
		{name: "page tables and vCPUs grow with the guest", guest: "4Gi", want: "260Mi",
			vmi: func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.CPU = &v1.CPU{Cores: 2, Sockets: 2, Threads: 1} }},
		// 180 + 2048 (1 TiB / 512) + 8 + 8 + 32.
		{name: "a large guest's page tables", guest: "1Ti", want: "2276Mi"},
		{name: "EFI and a TPM", guest: "128Mi", want: "290Mi", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{}}}
			vmi.Spec.Domain.Devices.TPM = &v1.TPMDevice{}
		}},
		{name: "a disabled TPM costs nothing", guest: "128Mi", want: "229Mi", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Devices.TPM = &v1.TPMDevice{Enabled: ptr.To(false)}
		}},
		{name: "a memory limit adds the margin", guest: "128Mi", want: "329Mi", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MemoryOverhead(testVMI(tt.vmi), q(tt.guest), base)
			assert.Zero(t, got.Cmp(q(tt.want)), "overhead %s, want %s", got.String(), tt.want)
		})
	}
}

// TestMemoryOverheadAtLeastKubeVirts: beside their fixed parts (Hangar's measured base,
// KubeVirt's 220 MiB of process sizes), the guest-dependent terms are at least KubeVirt's for
// the same guest: page tables, 8 MiB per vCPU and for the I/O thread, 32 MiB of video, 53 MiB
// for swtpm.
func TestMemoryOverheadAtLeastKubeVirts(t *testing.T) {
	const mi = 1 << 20
	for _, vcpus := range []uint32{1, 4, 16, 64} {
		for _, guest := range []string{"64Mi", "4Gi", "64Gi"} {
			vmi := testVMI(func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.CPU = &v1.CPU{Cores: vcpus, Sockets: 1, Threads: 1}
				vmi.Spec.Domain.Devices.TPM = &v1.TPMDevice{}
			})
			g := q(guest)
			kubevirts := g.Value()/512 + int64(vcpus)*8*mi + 8*mi + 32*mi + 53*mi
			got := MemoryOverhead(vmi, g, q("0"))
			assert.GreaterOrEqual(t, got.Value(), kubevirts, "%d vCPUs, %s", vcpus, guest)
		}
	}
}
