package launcher

import (
	"errors"
	"fmt"
	"os"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
)

// Reasons a start fails for, in the launcher's final state and from there in the instance's
// status.reason, its Synchronized condition and an event: each names what the user has to
// fix. StartFailed is what is left.
const (
	// ReasonContainerDiskNotFound: a containerDisk image holds no disk (nothing under /disk/,
	// or nothing at the volume's path).
	ReasonContainerDiskNotFound = "ContainerDiskNotFound"
	// ReasonContainerDiskAmbiguous: more than one file under /disk/ and no path to choose.
	ReasonContainerDiskAmbiguous = "ContainerDiskAmbiguous"
	// ReasonKernelBootFileNotFound: the kernelBoot image has no file at kernelPath or initrdPath.
	ReasonKernelBootFileNotFound = "KernelBootFileNotFound"
	// ReasonVolumeFailed: preparing a volume (overlay, empty disk, cloud-init ISO) failed.
	ReasonVolumeFailed = "VolumeFailed"
	// ReasonNetworkSetupFailed: the guest's interfaces could not be prepared.
	ReasonNetworkSetupFailed = "NetworkSetupFailed"
	// ReasonDomainDefineFailed: libvirt refused the domain.
	ReasonDomainDefineFailed = "DomainDefineFailed"
	// ReasonDomainStartFailed: QEMU refused to start the domain (libvirt says why).
	ReasonDomainStartFailed = "DomainStartFailed"
	// ReasonStartFailed: any other failure of the start.
	ReasonStartFailed = "StartFailed"
)

// startError is a failed start with the reason to report.
type startError struct {
	reason string
	err    error
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func failed(reason string, format string, args ...any) error {
	return &startError{reason: reason, err: fmt.Errorf(format, args...)}
}

// failureReason is the reason of a failed start's error.
func failureReason(err error) string {
	var se *startError
	if errors.As(err, &se) {
		return se.reason
	}
	return ReasonStartFailed
}

// checkKernelBoot fails early, with the paths the user wrote, when the kernelBoot image lacks
// the kernel or initrd: QEMU's own message ("could not load kernel") names neither the image
// nor the spec's path.
func checkKernelBoot(vmi *v1.VirtualMachineInstance, root string) error {
	fw := vmi.Spec.Domain.Firmware
	if fw == nil || fw.KernelBoot == nil || fw.KernelBoot.Container == nil || root == "" {
		return nil
	}
	c := fw.KernelBoot.Container
	for _, f := range []struct{ field, path string }{{"kernelPath", c.KernelPath}, {"initrdPath", c.InitrdPath}} {
		if f.path == "" {
			continue
		}
		fi, err := os.Stat(domain.UnderRoot(root, f.path))
		if err == nil && fi.Mode().IsRegular() {
			continue
		}
		what := "no file"
		if err == nil {
			what = "no regular file"
		}
		return failed(ReasonKernelBootFileNotFound, "kernelBoot image %q has %s at %s %q", c.Image, what, f.field, f.path)
	}
	return nil
}
