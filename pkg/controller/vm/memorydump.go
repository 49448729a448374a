package vm

import (
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Memory dumps (docs/hotplug.md): the memorydump action records the request in the VM's
// status (Associating, with the dump's file name) and adds the memory dump volume to the
// running instance, whose volume status virt-controller and the node agent move on. The
// request follows that status, as KubeVirt's phases go: InProgress while the guest's memory
// is written, Unmounting once it is written and until the attachment pod is gone, then
// Completed (or Failed). removememorydump marks it Dissociating and takes the volume out of
// the instance; the request goes once the instance no longer lists the volume.

// nextMemoryDump is the VM's memory dump request given its instance (nil: none). Only the
// instance's status of the volume that names the request's file counts: an earlier dump's
// status is no word on this one.
func nextMemoryDump(req *v1.VirtualMachineMemoryDumpRequest, vmi *v1.VirtualMachineInstance) *v1.VirtualMachineMemoryDumpRequest {
	if req == nil {
		return nil
	}
	var status *v1.VolumeStatus
	if vmi != nil {
		for i := range vmi.Status.VolumeStatus {
			if s := &vmi.Status.VolumeStatus[i]; s.Name == req.ClaimName {
				status = s
			}
		}
	}
	next := req.DeepCopy()
	if req.Phase == v1.MemoryDumpDissociating || req.Remove {
		if status == nil && !hasMemoryDumpVolume(vmi, req.ClaimName) {
			return nil
		}
		return next
	}
	if req.Phase == v1.MemoryDumpCompleted || req.Phase == v1.MemoryDumpFailed {
		return next
	}
	ours := status != nil && status.MemoryDumpVolume != nil && req.FileName != nil &&
		status.MemoryDumpVolume.TargetFileName == *req.FileName
	switch {
	case ours:
		md := status.MemoryDumpVolume
		if md.StartTimestamp != nil {
			next.StartTimestamp = md.StartTimestamp
		}
		switch status.Phase {
		case v1.MemoryDumpVolumeInProgress:
			next.Phase = v1.MemoryDumpInProgress
		case v1.MemoryDumpVolumeFailed:
			next.Phase, next.Message, next.EndTimestamp = v1.MemoryDumpFailed, status.Message, md.EndTimestamp
		case v1.MemoryDumpVolumeCompleted:
			next.Phase, next.EndTimestamp = v1.MemoryDumpUnmounting, md.EndTimestamp
			if status.HotplugVolume == nil {
				next.Phase = v1.MemoryDumpCompleted // its attachment pod is gone
			}
		}
	case req.Phase == v1.MemoryDumpUnmounting:
		next.Phase = v1.MemoryDumpCompleted // the instance, and its pods, are gone
	}
	gone := vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil
	if gone && (next.Phase == v1.MemoryDumpAssociating || next.Phase == v1.MemoryDumpInProgress) {
		next.Phase, next.Message = v1.MemoryDumpFailed, "the instance stopped before the memory dump was written"
	}
	return next
}

func hasMemoryDumpVolume(vmi *v1.VirtualMachineInstance, name string) bool {
	if vmi == nil {
		return false
	}
	for _, v := range vmi.Spec.Volumes {
		if v.Name == name && v.MemoryDump != nil {
			return true
		}
	}
	return false
}
