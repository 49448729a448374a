package vm

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	vmicontroller "github.com/hangarvm/hangar/pkg/controller/vmi"
)

// GenerationAnnotation on an instance is the VM generation whose template it was created
// from (KubeVirt's kubevirt.io/vm-generation).
const GenerationAnnotation = "kubevirt.io/vm-generation"

// Reasons of the VM's Ready condition when the instance cannot tell (KubeVirt's).
const (
	ReasonVMINotExists        = "VMINotExists"
	ReasonVMIConditionMissing = "VMIConditionMissing"
)

// Reasons of the Failure condition.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// syncError is a failure to act, shown in the Failure condition.
type syncError struct {
	reason string
	err    error
}

func (e *syncError) Error() string { return e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// pending is what the controller has done that its cache does not show yet.
type pending struct {
	start, stop bool
	// dataVolumes is Provisioning, WaitingForVolumeBinding or DataVolumeError while the VM's
	// DataVolumes keep its instance from starting (datavolumes.go), else "".
	dataVolumes v1.VirtualMachinePrintableStatus
}

// nextStatus computes the VM's status from the VM, its instance (nil: none) and the writes in
// flight. jitter randomises the crash-loop back-off.
func nextStatus(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, p pending, syncErr *syncError,
	now time.Time, jitter func(int) int) v1.VirtualMachineStatus {
	s := *vm.Status.DeepCopy()
	view := &v1.VirtualMachine{ObjectMeta: vm.ObjectMeta, Spec: vm.Spec, Status: s}

	if trimFirstRequest(view, vmi) {
		s.StateChangeRequests = s.StateChangeRequests[1:]
		if len(s.StateChangeRequests) == 0 {
			s.StateChangeRequests = nil
		}
	}
	s.Created = vmi != nil
	s.Ready = vmi != nil && vmiCondition(vmi, v1.VirtualMachineInstanceReady, corev1.ConditionTrue) != nil
	s.RunStrategy = vm.Spec.EffectiveRunStrategy()
	syncStartFailure(&s, vm.Spec.EffectiveRunStrategy(), vmi, now, jitter)
	if vmi != nil {
		if gen, err := strconv.ParseInt(vmi.Annotations[GenerationAnnotation], 10, 64); err == nil {
			s.ObservedGeneration = gen
			s.DesiredGeneration = vm.Generation
		}
	}
	syncConditions(&s, vmi, syncErr, metav1.NewTime(now))
	s.MemoryDumpRequest = nextMemoryDump(s.MemoryDumpRequest, vmi)

	view.Status = s
	s.PrintableStatus = printableStatus(view, vmi, p)
	return s
}

// trimFirstRequest: the first state change request has been carried out. A stop is done
// when its instance is gone (or was never there); a start when a live instance exists.
func trimFirstRequest(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	r := vm.Status.StateChangeRequests
	if len(r) == 0 {
		return false
	}
	switch r[0].Action {
	case v1.StopRequest:
		return vmi == nil || r[0].UID == nil || *r[0].UID != vmi.UID
	case v1.StartRequest:
		return vmi != nil && vmi.DeletionTimestamp == nil && !vmi.IsFinal()
	}
	return true // an action this controller does not know would block the queue forever
}

// syncStartFailure counts consecutive instances that ended without ever running, and resets
// the count once one runs or the strategy no longer restarts.
func syncStartFailure(s *v1.VirtualMachineStatus, strategy v1.VirtualMachineRunStrategy, vmi *v1.VirtualMachineInstance,
	now time.Time, jitter func(int) int) {
	switch {
	case wasRunning(vmi) || !restarts(strategy):
		s.StartFailure = nil
	case failedEarly(vmi):
		if s.StartFailure != nil && s.StartFailure.LastFailedVMIUID == vmi.UID {
			return
		}
		count := 1
		if s.StartFailure != nil {
			count = s.StartFailure.ConsecutiveFailCount + 1
		}
		retry := metav1.NewTime(now.Add(startBackoff(count, jitter)))
		s.StartFailure = &v1.VirtualMachineStartFailure{LastFailedVMIUID: vmi.UID, RetryAfterTimestamp: &retry, ConsecutiveFailCount: count}
	}
}

// syncConditions: Ready mirrors the instance's, Failure reports the last sync error, and the
// instance's other conditions (Paused, PodScheduled, ...) are copied, as KubeVirt does.
func syncConditions(s *v1.VirtualMachineStatus, vmi *v1.VirtualMachineInstance, syncErr *syncError, now metav1.Time) {
	ready := v1.VirtualMachineCondition{Type: v1.VirtualMachineReady, Status: corev1.ConditionFalse,
		Reason: ReasonVMINotExists, Message: "VMI does not exist"}
	if vmi != nil {
		if c := vmiCondition(vmi, v1.VirtualMachineInstanceReady, ""); c != nil {
			ready = v1.VirtualMachineCondition{Type: v1.VirtualMachineReady, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime}
		} else {
			ready.Reason, ready.Message = ReasonVMIConditionMissing, "VMI is missing the Ready condition"
		}
	}
	setCondition(s, ready, now)

	if syncErr != nil {
		setCondition(s, v1.VirtualMachineCondition{Type: v1.VirtualMachineFailure, Status: corev1.ConditionTrue,
			Reason: syncErr.reason, Message: syncErr.Error()}, now)
	} else {
		removeConditions(s, func(t v1.VirtualMachineConditionType) bool { return t == v1.VirtualMachineFailure })
	}

	own := func(t v1.VirtualMachineConditionType) bool {
		return t == v1.VirtualMachineReady || t == v1.VirtualMachineFailure
	}
	copied := map[v1.VirtualMachineConditionType]bool{}
	if vmi != nil {
		for _, c := range vmi.Status.Conditions {
			t := v1.VirtualMachineConditionType(c.Type)
			if own(t) {
				continue
			}
			copied[t] = true
			setCondition(s, v1.VirtualMachineCondition{Type: t, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime, LastProbeTime: c.LastProbeTime}, now)
		}
	}
	removeConditions(s, func(t v1.VirtualMachineConditionType) bool { return !own(t) && !copied[t] })
}

// printableStatus is the first of KubeVirt's statuses that holds, in KubeVirt's order.
// The image-pull statuses need features Hangar does not have yet and are never shown; the
// DataVolume statuses are shown while no instance runs.
func printableStatus(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, p pending) v1.VirtualMachinePrintableStatus {
	paused := vmi != nil && vmiCondition(vmi, v1.VirtualMachineInstancePaused, corev1.ConditionTrue) != nil
	strategy := vm.Spec.EffectiveRunStrategy()
	switch {
	case vm.DeletionTimestamp != nil:
		return v1.VirtualMachineStatusTerminating
	case vmi != nil && !vmi.IsFinal() && (vmi.DeletionTimestamp != nil || p.stop):
		return v1.VirtualMachineStatusStopping
	case isRunning(vmi) && migrating(vmi):
		return v1.VirtualMachineStatusMigrating
	case isRunning(vmi) && paused:
		return v1.VirtualMachineStatusPaused
	case isRunning(vmi):
		return v1.VirtualMachineStatusRunning
	case vmi != nil && isPvcNotFound(vmi):
		return v1.VirtualMachineStatusPvcNotFound
	case vmi != nil && isUnschedulable(vmi):
		return v1.VirtualMachineStatusUnschedulable
	case vmi == nil && !p.start && p.dataVolumes != "":
		return p.dataVolumes
	case vmi == nil && p.start, vmi != nil && isStarting(vmi):
		return v1.VirtualMachineStatusStarting
	case (vmi == nil || vmi.IsFinal()) && !p.start && vm.Status.StartFailure != nil &&
		vm.Status.StartFailure.ConsecutiveFailCount > 0 && restarts(strategy):
		return v1.VirtualMachineStatusCrashLoopBackOff
	case vmi != nil && vmi.IsFinal(), vmi == nil && !p.start:
		return v1.VirtualMachineStatusStopped
	}
	return v1.VirtualMachineStatusUnknown
}

func isStarting(vmi *v1.VirtualMachineInstance) bool {
	switch vmi.Status.Phase {
	case v1.VmPhaseUnset, v1.Pending, v1.Scheduling, v1.Scheduled:
		return true
	}
	return false
}

// isPvcNotFound: the instance controller waits for a claim the instance names.
func isPvcNotFound(vmi *v1.VirtualMachineInstance) bool {
	c := vmiCondition(vmi, v1.VirtualMachineInstanceSynchronized, corev1.ConditionFalse)
	return c != nil && c.Reason == vmicontroller.FailedPvcNotFoundReason
}

func isUnschedulable(vmi *v1.VirtualMachineInstance) bool {
	c := vmiCondition(vmi, v1.VirtualMachineInstanceConditionType(corev1.PodScheduled), corev1.ConditionFalse)
	return c != nil && c.Reason == corev1.PodReasonUnschedulable
}

// vmiCondition returns the instance's condition of type t, if its status is status (any when "").
func vmiCondition(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType, status corev1.ConditionStatus) *v1.VirtualMachineInstanceCondition {
	for i := range vmi.Status.Conditions {
		c := &vmi.Status.Conditions[i]
		if c.Type == t && (status == "" || c.Status == status) {
			return c
		}
	}
	return nil
}

// setCondition sets a condition; an unchanged one keeps its times, so an idle VM causes no writes.
func setCondition(s *v1.VirtualMachineStatus, cond v1.VirtualMachineCondition, now metav1.Time) {
	for i := range s.Conditions {
		old := s.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
			return
		}
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = old.LastTransitionTime
			if old.Status != cond.Status || cond.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = now
			}
		}
		s.Conditions[i] = cond
		return
	}
	if cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = now
	}
	s.Conditions = append(s.Conditions, cond)
}

func removeConditions(s *v1.VirtualMachineStatus, drop func(v1.VirtualMachineConditionType) bool) {
	var out []v1.VirtualMachineCondition
	for _, c := range s.Conditions {
		if !drop(c.Type) {
			out = append(out, c)
		}
	}
	s.Conditions = out
}

// migrating: the instance has a migration under way.
func migrating(vmi *v1.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.MigrationUid != "" && !ms.Completed && !ms.Failed
}
