package vm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestNextMemoryDump: the request follows the instance's status of the dump volume through
// KubeVirt's phases, counts only the status of its own file, fails when the instance goes
// before the dump is written, and goes once removed and out of the instance.
func TestNextMemoryDump(t *testing.T) {
	start, end := metav1.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), metav1.Date(2026, 11, 29, 2, 0, 9, 0, time.UTC)
	const file = "guest-dump-20261129-020000.memory.dump"
	req := func(phase v1.MemoryDumpPhase) *v1.VirtualMachineMemoryDumpRequest {
		return &v1.VirtualMachineMemoryDumpRequest{ClaimName: "dump", Phase: phase, FileName: ptr.To(file)}
	}
	pod := &v1.HotplugVolumeStatus{AttachPodName: "hp-volume-1", AttachPodUID: "uid"}
	vmiWith := func(phase v1.VolumePhase, pod *v1.HotplugVolumeStatus, fileName string) *v1.VirtualMachineInstance {
		vmi := &v1.VirtualMachineInstance{Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running}}
		vmi.Spec.Volumes = []v1.Volume{{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{}}}}
		vmi.Status.VolumeStatus = []v1.VolumeStatus{{Name: "dump", Phase: phase, HotplugVolume: pod, Message: "why",
			MemoryDumpVolume: &v1.DomainMemoryDumpInfo{ClaimName: "dump", TargetFileName: fileName, StartTimestamp: &start, EndTimestamp: &end}}}
		return vmi
	}
	with := func(r *v1.VirtualMachineMemoryDumpRequest, f func(*v1.VirtualMachineMemoryDumpRequest)) *v1.VirtualMachineMemoryDumpRequest {
		f(r)
		return r
	}
	stopped := vmiWith(v1.VolumePending, nil, file)
	stopped.Status.Phase = v1.Failed
	tests := []struct {
		name string
		req  *v1.VirtualMachineMemoryDumpRequest
		vmi  *v1.VirtualMachineInstance
		want *v1.VirtualMachineMemoryDumpRequest
	}{
		{name: "none", vmi: vmiWith(v1.VolumePending, nil, file)},
		{name: "the claim on its way", req: req(v1.MemoryDumpAssociating), vmi: vmiWith(v1.HotplugVolumeAttachedToNode, pod, file),
			want: with(req(v1.MemoryDumpAssociating), func(r *v1.VirtualMachineMemoryDumpRequest) { r.StartTimestamp = &start })},
		{name: "being written", req: req(v1.MemoryDumpAssociating), vmi: vmiWith(v1.MemoryDumpVolumeInProgress, pod, file),
			want: with(req(v1.MemoryDumpInProgress), func(r *v1.VirtualMachineMemoryDumpRequest) { r.StartTimestamp = &start })},
		{name: "written, the pod still there", req: req(v1.MemoryDumpInProgress), vmi: vmiWith(v1.MemoryDumpVolumeCompleted, pod, file),
			want: with(req(v1.MemoryDumpUnmounting), func(r *v1.VirtualMachineMemoryDumpRequest) { r.StartTimestamp, r.EndTimestamp = &start, &end })},
		{name: "written, the pod gone", req: req(v1.MemoryDumpUnmounting), vmi: vmiWith(v1.MemoryDumpVolumeCompleted, nil, file),
			want: with(req(v1.MemoryDumpCompleted), func(r *v1.VirtualMachineMemoryDumpRequest) { r.StartTimestamp, r.EndTimestamp = &start, &end })},
		{name: "failed", req: req(v1.MemoryDumpInProgress), vmi: vmiWith(v1.MemoryDumpVolumeFailed, pod, file),
			want: with(req(v1.MemoryDumpFailed), func(r *v1.VirtualMachineMemoryDumpRequest) {
				r.StartTimestamp, r.EndTimestamp, r.Message = &start, &end, "why"
			})},
		{name: "an earlier dump's status counts not", req: req(v1.MemoryDumpAssociating),
			vmi: vmiWith(v1.MemoryDumpVolumeCompleted, nil, "guest-dump-20260101-000000.memory.dump"), want: req(v1.MemoryDumpAssociating)},
		{name: "the instance stopped first", req: req(v1.MemoryDumpInProgress), vmi: stopped,
			want: with(req(v1.MemoryDumpFailed), func(r *v1.VirtualMachineMemoryDumpRequest) {
				r.StartTimestamp, r.Message = &start, "the instance stopped before the memory dump was written"
			})},
		{name: "no instance while unmounting: done", req: req(v1.MemoryDumpUnmounting), want: req(v1.MemoryDumpCompleted)},
		{name: "completed stays", req: req(v1.MemoryDumpCompleted), want: req(v1.MemoryDumpCompleted)},
		{name: "removed, still in the instance", req: with(req(v1.MemoryDumpDissociating), func(r *v1.VirtualMachineMemoryDumpRequest) { r.Remove = true }),
			vmi:  vmiWith(v1.HotplugVolumeDetaching, nil, file),
			want: with(req(v1.MemoryDumpDissociating), func(r *v1.VirtualMachineMemoryDumpRequest) { r.Remove = true })},
		{name: "removed and gone", req: with(req(v1.MemoryDumpDissociating), func(r *v1.VirtualMachineMemoryDumpRequest) { r.Remove = true }),
			vmi: &v1.VirtualMachineInstance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, nextMemoryDump(tt.req, tt.vmi))
		})
	}
}
