package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Hotplug (docs/hotplug.md): virt-handler hands over open descriptors of each hotplugged
// claim's file on the handover socket, then syncs the instance whose spec names the volume;
// the launcher gives them to QEMU as an fd set and attaches the disk to the running guest,
// its source /dev/fdset/<id>, and detaches it once the spec no longer names it. The launcher
// never gets a path on the node, and QEMU opens nothing by a path.

// hotplugged is one volume attached to the running guest.
type hotplugged struct {
	fdset  int    // QEMU's fd set of the handed-over descriptors, the disk's source
	xml    string // the disk as attached, to detach it
	target string
}

// hotplugFDSetBase keeps hotplug's fd set IDs clear of those libvirt numbers from 0.
const hotplugFDSetBase = 1000

// fdSetPlaceholder is the empty file that stands for fd set id where libvirt looks for a
// disk's source (layout.FDSetDir).
func (l *Launcher) fdSetPlaceholder(id int) string {
	dir := l.cfg.FDSetDir
	if dir == "" {
		dir = layout.FDSetDir
	}
	return filepath.Join(dir, strconv.Itoa(id))
}

// attachHandedOver gives QEMU the descriptors handed over for volume as an fd set of their
// own and attaches disk with that set, /dev/fdset/<id>, for its source: QEMU opens nothing
// by a path. (A block device could not be opened from the launcher's container at all: its
// device cgroup was never given the device, and holding a descriptor does not change that.)
// files are the descriptor in each access mode QEMU opens the disk with: read-only first,
// then for writing once the guest's device is added (libvirt's auto-read-only).
func (l *Launcher) attachHandedOver(domainName, volume string, disk v1.Disk, files []*os.File, used map[string]bool) (*hotplugged, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(files[0].Fd()), &st); err != nil {
		return nil, fmt.Errorf("volume %s: %w", volume, err)
	}
	l.mu.Lock()
	l.fdSets++
	set := hotplugFDSetBase + l.fdSets
	l.mu.Unlock()
	dd, err := domain.HotplugDisk(disk, path.Join(layout.FDSetDir, strconv.Itoa(set)), st.Mode&unix.S_IFMT == unix.S_IFBLK, used)
	if err != nil {
		return nil, err
	}
	xml, err := dd.Marshal()
	if err != nil {
		return nil, err
	}
	placeholder := l.fdSetPlaceholder(set)
	if err := os.WriteFile(placeholder, nil, 0o600); err != nil {
		return nil, fmt.Errorf("volume %s: a placeholder for its fd set: %w", volume, err)
	}
	if err := l.hv.AddFDSet(domainName, set, files); err != nil {
		_ = os.Remove(placeholder)
		return nil, fmt.Errorf("volume %s: %w", volume, err)
	}
	if err := l.hv.AttachDevice(domainName, xml); err != nil {
		_ = l.hv.RemoveFDSet(domainName, set) // nothing uses it
		_ = os.Remove(placeholder)
		return nil, fmt.Errorf("attach volume %s: %w", volume, err)
	}
	return &hotplugged{fdset: set, xml: xml, target: dd.Target.Dev}, nil
}

// HandoverSocketPath is the socket virt-handler hands descriptors over on.
func (l *Launcher) HandoverSocketPath() string {
	return filepath.Join(l.cfg.SocketDir, api.HandoverSocket)
}

// serveHandovers takes handovers until ctx ends, one per connection.
func (l *Launcher) serveHandovers(ctx context.Context, ln net.Listener) {
	acceptEach(ctx, ln, "handover socket", func(c net.Conn) { l.takeHandover(c.(*net.UnixConn)) })
}

// takeHandover keeps the descriptors of one handover until a sync attaches them; a later
// handover of the same volume replaces one not attached yet.
func (l *Launcher) takeHandover(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(headerWait))
	h, files, err := api.ReceiveHandover(c)
	if err == nil && h.MemoryDump == "" && !h.ReadOnlyCopy {
		files, err = withReadOnlyCopy(h, files)
	}
	if err != nil {
		klog.InfoS("refused a handover", "err", err)
		_, _ = c.Write([]byte(err.Error()))
		return
	}
	if h.MemoryDump != "" {
		l.takeMemoryDump(h.Volume, h.MemoryDump, files[0])
		klog.InfoS("took a memory dump's handover", "volume", h.Volume, "file", h.MemoryDump)
		_, _ = c.Write([]byte{api.HandoverOK})
		return
	}
	l.mu.Lock()
	closeAll(l.handedOver[h.Volume])
	if l.handedOver == nil {
		l.handedOver = map[string][]*os.File{}
	}
	l.handedOver[h.Volume] = files
	l.mu.Unlock()
	klog.InfoS("took a handover", "volume", h.Volume)
	_, _ = c.Write([]byte{api.HandoverOK})
}

// withReadOnlyCopy adds the read-only copy of a writable disk that a virt-handler older than
// the launcher handed over without one: the launcher opens the file again, through its own
// descriptor, which it may do for a regular file. A block device it could not open (its
// container's device cgroup was never given it), and such a handler never hands one over.
func withReadOnlyCopy(h api.Handover, files []*os.File) ([]*os.File, error) {
	if !h.Writable {
		return files, nil
	}
	ro, err := api.ReadOnlyCopy(files[0])
	if err != nil {
		closeAll(files)
		return nil, fmt.Errorf("handover of volume %s: a read-only copy: %w", h.Volume, err)
	}
	return append(files, ro), nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
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
		// QEMU keeps the descriptors a disk still uses and closes the rest.
		if err := l.hv.RemoveFDSet(name, h.fdset); err != nil {
			klog.InfoS("could not drop a detached volume's fd set", "volume", volume, "fdset", h.fdset, "err", err)
		}
		_ = os.Remove(l.fdSetPlaceholder(h.fdset))
		l.mu.Lock()
		delete(l.hotplugged, volume)
		l.mu.Unlock()
		klog.InfoS("detached a hotplugged volume", "volume", volume, "target", h.target)
	}
	for _, volume := range sortedKeys(wanted) {
		l.mu.Lock()
		_, attached := l.hotplugged[volume]
		files := l.handedOver[volume]
		l.mu.Unlock()
		if attached || files == nil {
			continue
		}
		h, err := l.attachHandedOver(name, volume, wanted[volume], files, used)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		used[h.target] = true
		closeAll(files) // QEMU has its own
		l.mu.Lock()
		delete(l.handedOver, volume)
		if l.hotplugged == nil {
			l.hotplugged = map[string]*hotplugged{}
		}
		l.hotplugged[volume] = h
		l.mu.Unlock()
		klog.InfoS("attached a hotplugged volume", "volume", volume, "target", h.target)
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
