package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
)

// Hotplug (docs/hotplug.md): virt-handler hands over an open descriptor of each hotplugged
// claim's file on the handover socket, then syncs the instance whose spec names the volume;
// the launcher attaches the disk to the running guest, its source the descriptor as
// /proc/<launcher PID>/fd/<n> (QEMU, the same user in the same pod, opens that), and
// detaches it once the spec no longer names it. The launcher never gets a path on the node.

// hotplugged is one volume attached to the running guest.
type hotplugged struct {
	file   *os.File // the descriptor handed over, kept while the disk is attached
	xml    string   // the disk as attached, to detach it
	target string
}

// HandoverSocketPath is the socket virt-handler hands descriptors over on.
func (l *Launcher) HandoverSocketPath() string {
	return filepath.Join(l.cfg.SocketDir, api.HandoverSocket)
}

// serveHandovers takes handovers until ctx ends, one per connection.
func (l *Launcher) serveHandovers(ctx context.Context, ln net.Listener) {
	acceptEach(ctx, ln, "handover socket", func(c net.Conn) { l.takeHandover(c.(*net.UnixConn)) })
}

// takeHandover keeps the descriptor of one handover until a sync attaches it; a later
// handover of the same volume replaces one not attached yet.
func (l *Launcher) takeHandover(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(headerWait))
	h, f, err := api.ReceiveHandover(c)
	if err != nil {
		klog.InfoS("refused a handover", "err", err)
		_, _ = c.Write([]byte(err.Error()))
		return
	}
	if h.MemoryDump != "" {
		l.takeMemoryDump(h.Volume, h.MemoryDump, f)
		klog.InfoS("took a memory dump's handover", "volume", h.Volume, "file", h.MemoryDump)
		_, _ = c.Write([]byte{api.HandoverOK})
		return
	}
	l.mu.Lock()
	if old := l.handedOver[h.Volume]; old != nil {
		old.Close()
	}
	if l.handedOver == nil {
		l.handedOver = map[string]*os.File{}
	}
	l.handedOver[h.Volume] = f
	l.mu.Unlock()
	klog.InfoS("took a handover", "volume", h.Volume)
	_, _ = c.Write([]byte{api.HandoverOK})
}

// hotplugVolumes are the volumes of vmi's spec that are hotplugged, with their disks.
func hotplugVolumes(vmi *v1.VirtualMachineInstance) map[string]v1.Disk {
	disks := map[string]v1.Disk{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = d
	}
	out := map[string]v1.Disk{}
	for _, v := range vmi.Spec.Volumes {
		if d, ok := disks[v.Name]; v.Hotplugged() && ok {
			out[v.Name] = d
		}
	}
	return out
}

// syncHotplug brings the running guest's hotplugged disks to vmi's spec: each hotplugged
// volume handed over and not attached is attached, each attached one the spec dropped is
// detached. A volume not handed over yet waits for its handover and the next sync. The
// caller holds startMu.
func (l *Launcher) syncHotplug(vmi *v1.VirtualMachineInstance) error {
	wanted := hotplugVolumes(vmi)
	l.mu.Lock()
	for name := range l.coldHotpluggable {
		delete(wanted, name) // the domain started with it
	}
	name, running := l.state.Domain, l.state.Phase == api.PhaseRunning || l.state.Phase == api.PhasePaused
	used := map[string]bool{}
	for target := range l.diskBuses {
		used[target] = true
	}
	for _, h := range l.hotplugged {
		used[h.target] = true
	}
	l.mu.Unlock()
	if !running || name == "" {
		return nil
	}
	var errs []error
	l.mu.Lock()
	attachedNames := sortedKeys(l.hotplugged)
	l.mu.Unlock()
	for _, volume := range attachedNames {
		if _, ok := wanted[volume]; ok {
			continue
		}
		l.mu.Lock()
		h := l.hotplugged[volume]
		l.mu.Unlock()
		if err := l.hv.DetachDevice(name, h.xml); err != nil {
			errs = append(errs, fmt.Errorf("detach volume %s: %w", volume, err))
			continue
		}
		h.file.Close()
		l.mu.Lock()
		delete(l.hotplugged, volume)
		l.mu.Unlock()
		klog.InfoS("detached a hotplugged volume", "volume", volume, "target", h.target)
	}
	for _, volume := range sortedKeys(wanted) {
		l.mu.Lock()
		_, attached := l.hotplugged[volume]
		f := l.handedOver[volume]
		l.mu.Unlock()
		if attached || f == nil {
			continue
		}
		dd, err := domain.HotplugDisk(wanted[volume], fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()), used)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		xml, err := dd.Marshal()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := l.hv.AttachDevice(name, xml); err != nil {
			errs = append(errs, fmt.Errorf("attach volume %s: %w", volume, err))
			continue
		}
		used[dd.Target.Dev] = true
		l.mu.Lock()
		delete(l.handedOver, volume)
		if l.hotplugged == nil {
			l.hotplugged = map[string]*hotplugged{}
		}
		l.hotplugged[volume] = &hotplugged{file: f, xml: xml, target: dd.Target.Dev}
		l.mu.Unlock()
		klog.InfoS("attached a hotplugged volume", "volume", volume, "target", dd.Target.Dev)
	}
	l.update(func(s *api.State) {
		s.Hotplugged = nil
		for _, volume := range sortedKeys(l.hotplugged) {
			s.Hotplugged = append(s.Hotplugged, api.HotpluggedVolume{Name: volume, Target: l.hotplugged[volume].target})
		}
	})
	return errors.Join(errs...)
}

// withoutHotplug is vmi without the hotplugged volumes (and their disks) that the launcher
// pod does not have: what the domain starts with. Those are attached once it runs, as they
// would be to a guest that runs already. A hotpluggable volume the pod has (a claim
// virt-controller mounted, as for a VM that persisted its hotplugged volume) is an ordinary
// disk of the domain.
func withoutHotplug(vmi *v1.VirtualMachineInstance, lay domain.Layout) *v1.VirtualMachineInstance {
	hot := hotplugVolumes(vmi)
	for name := range hot {
		if inPod(lay, name) {
			delete(hot, name)
		}
	}
	if len(hot) == 0 {
		return vmi
	}
	cold := vmi.DeepCopy()
	cold.Spec.Volumes = slices.DeleteFunc(cold.Spec.Volumes, func(v v1.Volume) bool { _, ok := hot[v.Name]; return ok })
	cold.Spec.Domain.Devices.Disks = slices.DeleteFunc(cold.Spec.Domain.Devices.Disks, func(d v1.Disk) bool { _, ok := hot[d.Name]; return ok })
	return cold
}

// inPod says whether the launcher pod has the claim of volume: its image file or its device.
func inPod(lay domain.Layout, volume string) bool {
	if _, err := os.Stat(lay.PVCFile(volume)); err == nil {
		return true
	}
	return isBlockDevice(lay.PVCBlock(volume))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
