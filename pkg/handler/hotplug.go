package handler

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podfiles"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// Hotplug on the node (docs/hotplug.md): for each hotplugged volume whose attachment pod runs
// on this node (AttachedToNode, virt-controller's word), the handler opens the claim's file
// through that pod's process (package podfiles), hands the descriptor to the launcher on its
// handover socket, and syncs the launcher with the instance's spec; the launcher attaches
// what the spec names and detaches what it dropped, and its state says which are in the
// guest. The status then says Ready (with the disk's target), and a dropped volume's entry
// goes once the guest no longer has it, which lets virt-controller delete its pod.

// inAttachmentPod is file of the claim's root in the attachment pod, relative to its
// container's root.
func inAttachmentPod(file string) string {
	return strings.TrimPrefix(launcherpod.HotplugMountPath+"/"+file, "/")
}

// handoverTimeout bounds one handover: the launcher answers at once.
const handoverTimeout = 10 * time.Second

// hotplugSpec is what of the spec the launcher follows while the guest runs: the hotplugged
// volumes, as a comparable string.
func hotplugSpec(vmi *v1.VirtualMachineInstance) string {
	var names []string
	for _, v := range vmi.Spec.Volumes {
		if v.Hotplugged() {
			names = append(names, v.Name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// syncHotplug hands over the descriptors of the volumes whose attachment pods run, and syncs
// the launcher when that or the spec's hotplugged volumes changed since its last sync.
func (c *Controller) syncHotplug(ctx context.Context, vmi *v1.VirtualMachineInstance, l *launcher) error {
	if c.cfg.Files == nil {
		return nil
	}
	inSpec := map[string]bool{}
	for _, name := range strings.Split(hotplugSpec(vmi), ",") {
		inSpec[name] = true
	}
	handed := false
	for _, s := range vmi.Status.VolumeStatus {
		if s.Phase != v1.HotplugVolumeAttachedToNode || s.HotplugVolume == nil || s.HotplugVolume.AttachPodUID == "" || !inSpec[s.Name] {
			continue
		}
		l.mu.Lock()
		done := l.handedOver[s.Name] == s.HotplugVolume.AttachPodUID
		l.mu.Unlock()
		if done {
			continue
		}
		if err := c.handOver(l, s, s.HotplugVolume.AttachPodUID); err != nil {
			return fmt.Errorf("volume %s: %w", s.Name, err)
		}
		handed = true
	}
	spec := hotplugSpec(vmi)
	l.mu.Lock()
	changed := handed || l.hotplugSynced != spec
	l.mu.Unlock()
	if !changed {
		return nil
	}
	state, err := l.client.Sync(ctx, api.SyncRequest{VMI: vmi})
	if err == nil {
		err = checkState(state, vmi.UID)
	}
	if err != nil {
		return fmt.Errorf("launcher sync of hotplugged volumes: %w", err)
	}
	l.setState(state)
	l.mu.Lock()
	l.hotplugSynced = spec
	l.mu.Unlock()
	return nil
}

// handOver opens the claim's file in the attachment pod podUID (a disk image or device, or a
// memory dump's file, which virt-controller named) and hands it to the launcher.
func (c *Controller) handOver(l *launcher, s v1.VolumeStatus, podUID types.UID) error {
	volume := s.Name
	h, path, kind := api.Handover{Volume: volume, Writable: true}, inAttachmentPod(launcherpod.HotplugImage), podfiles.Disk
	if md := s.MemoryDumpVolume; md != nil {
		if !api.MemoryDumpFile.MatchString(md.TargetFileName) {
			return fmt.Errorf("%q is no memory dump file name", md.TargetFileName)
		}
		h.MemoryDump, kind = md.TargetFileName, podfiles.RegularFile
		path = inAttachmentPod(md.TargetFileName)
	}
	f, err := c.cfg.Files.OpenInPod(podUID, path, kind)
	if err != nil {
		return err
	}
	defer f.Close()
	files := []*os.File{f}
	if h.MemoryDump == "" && l.State().ReadOnlyCopies {
		ro, err := api.ReadOnlyCopy(f)
		if err != nil {
			return err
		}
		defer ro.Close()
		files, h.ReadOnlyCopy = append(files, ro), true
	}
	conn, err := l.dir.Dial(api.HandoverSocket)
	if err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(handoverTimeout)); err != nil {
		return err
	}
	if err := api.HandOver(conn.UnixConn, h, files...); err != nil {
		return err
	}
	l.mu.Lock()
	if l.handedOver == nil {
		l.handedOver = map[string]types.UID{}
	}
	l.handedOver[volume] = podUID
	l.mu.Unlock()
	klog.InfoS("handed a hotplugged volume to the launcher", "vmi", l.key, "volume", volume, "attachmentPod", podUID)
	return nil
}

// targetName is what a launcher may call a hotplugged disk: a SCSI disk's name.
var targetName = regexp.MustCompile(`^sd[a-z]{1,3}$`)

// volumeStatuses are the instance's volume statuses given the launcher's hotplugged volumes
// and memory dumps: those in the guest Ready with their target, and a dropped one
// (Detaching) gone once the guest no longer has it; a memory dump in progress, then
// completed or failed, once the launcher reports the dump of the file virt-controller named.
// Only volumes the status lists count: the launcher adds none.
func volumeStatuses(statuses []v1.VolumeStatus, hotplugged []api.HotpluggedVolume, dumps []api.MemoryDump, now metav1.Time) []v1.VolumeStatus {
	inGuest := map[string]string{}
	for _, h := range hotplugged {
		if targetName.MatchString(h.Target) {
			inGuest[h.Name] = h.Target
		}
	}
	dumped := map[string]api.MemoryDump{}
	for _, d := range dumps {
		dumped[d.Volume] = d
	}
	var out []v1.VolumeStatus
	for _, s := range statuses {
		target, attached := inGuest[s.Name]
		if md := s.MemoryDumpVolume; md != nil {
			d, ok := dumped[s.Name]
			ours := ok && d.FileName == md.TargetFileName
			if s.Phase == v1.HotplugVolumeDetaching {
				if !ours || d.Done {
					continue // removed, and no dump of it under way
				}
			} else if ours {
				s = memoryDumpStatus(s, d, now)
			}
			out = append(out, s)
			continue
		}
		switch {
		case s.Phase == v1.HotplugVolumeDetaching && !attached:
			continue
		case s.Phase == v1.HotplugVolumeAttachedToNode && attached:
			s.Phase, s.Target, s.Reason, s.Message = v1.VolumeReady, target, "", ""
		}
		out = append(out, s)
	}
	return out
}

// memoryDumpStatus is the status of memory dump volume s given what the launcher says of its
// dump d: in progress (from now), completed or failed (ended now). An ended dump stays so.
func memoryDumpStatus(s v1.VolumeStatus, d api.MemoryDump, now metav1.Time) v1.VolumeStatus {
	if s.Phase == v1.MemoryDumpVolumeCompleted || s.Phase == v1.MemoryDumpVolumeFailed {
		return s
	}
	md := s.MemoryDumpVolume.DeepCopy()
	if md.StartTimestamp == nil {
		md.StartTimestamp = &now
	}
	s.MemoryDumpVolume, s.Reason = md, ""
	switch {
	case !d.Done:
		s.Phase, s.Message = v1.MemoryDumpVolumeInProgress, "the guest's memory is being written to the claim"
	case d.Failed:
		md.EndTimestamp = &now
		s.Phase, s.Message = v1.MemoryDumpVolumeFailed, "memory dump failed: "+cleanMessage(d.Message)
	default:
		md.EndTimestamp = &now
		s.Phase, s.Message = v1.MemoryDumpVolumeCompleted, "the memory dump is on the claim"
	}
	return s
}
