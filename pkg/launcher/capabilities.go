package launcher

import (
	"os"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
)

// seededCapabilities is the file the launcher seeded libvirt's QEMU capabilities cache with,
// as it was before the start; the zero value when nothing was seeded.
type seededCapabilities struct {
	path string
	info os.FileInfo
}

// seedQEMUCapabilities writes virt-handler's QEMU capabilities into libvirtd's cache before
// the first define, so that libvirt need not probe QEMU (pkg/launcher/libvirtd/capabilities.go).
// Unless the guest lists CPU features, libvirt is also spared reading the started guest's CPU
// one property at a time (libvirtd.WithoutPerFeatureCPUQueries). Anything wrong with them
// only costs the probe.
func (l *Launcher) seedQEMUCapabilities(data string, vmi *v1.VirtualMachineInstance) seededCapabilities {
	if data == "" || l.cfg.LibvirtStateDir == "" {
		return seededCapabilities{}
	}
	caps := []byte(data)
	if cpu := vmi.Spec.Domain.CPU; cpu == nil || len(cpu.Features) == 0 {
		caps = libvirtd.WithoutPerFeatureCPUQueries(caps)
	}
	path, err := libvirtd.SeedCapabilities(l.cfg.LibvirtStateDir, domain.DefaultEmulator, caps)
	if err != nil {
		klog.InfoS("QEMU capabilities from virt-handler not seeded; libvirt probes QEMU", "err", err)
		return seededCapabilities{}
	}
	info, err := os.Stat(path)
	if err != nil {
		return seededCapabilities{}
	}
	return seededCapabilities{path: path, info: info}
}

// report says whether libvirt kept the seeded file or, finding it stale (another image's
// binaries, a host with KVM where the probe had none), probed QEMU and rewrote it.
func (s seededCapabilities) report() (used bool) {
	if s.info == nil {
		return false
	}
	now, err := os.Stat(s.path)
	used = err == nil && os.SameFile(s.info, now) && now.ModTime().Equal(s.info.ModTime()) && now.Size() == s.info.Size()
	klog.InfoS("QEMU capabilities from virt-handler", "used", used)
	return used
}
