package replicaset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// replicaError is a failed create or delete, shown in the ReplicaFailure condition.
type replicaError struct {
	reason string
	err    error
}

func (e *replicaError) Error() string { return e.err.Error() }
func (e *replicaError) Unwrap() error { return e.err }

func isReady(vmi *v1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == v1.VirtualMachineInstanceReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nextStatus is the set's status given its active instances and the scaling error, if any.
func nextStatus(rs *v1.VirtualMachineInstanceReplicaSet, selector labels.Selector, active []*v1.VirtualMachineInstance,
	scaleErr error, now metav1.Time) v1.VirtualMachineInstanceReplicaSetStatus {
	s := *rs.Status.DeepCopy()
	s.Replicas = int32(len(active))
	s.ReadyReplicas = 0
	for _, vmi := range active {
		if isReady(vmi) {
			s.ReadyReplicas++
		}
	}
	s.LabelSelector = selector.String()

	if re, ok := scaleErr.(*replicaError); ok {
		setCondition(&s, v1.VirtualMachineInstanceReplicaSetCondition{Type: v1.VirtualMachineInstanceReplicaSetReplicaFailure,
			Status: corev1.ConditionTrue, Reason: re.reason, Message: re.Error()}, now)
	} else if scaleErr == nil {
		removeCondition(&s, v1.VirtualMachineInstanceReplicaSetReplicaFailure)
	}
	if rs.Spec.Paused {
		setCondition(&s, v1.VirtualMachineInstanceReplicaSetCondition{Type: v1.VirtualMachineInstanceReplicaSetReplicaPaused,
			Status: corev1.ConditionTrue, Reason: "Paused", Message: "Controller got paused"}, now)
	} else {
		removeCondition(&s, v1.VirtualMachineInstanceReplicaSetReplicaPaused)
	}
	return s
}

func setCondition(s *v1.VirtualMachineInstanceReplicaSetStatus, cond v1.VirtualMachineInstanceReplicaSetCondition, now metav1.Time) {
	for i, old := range s.Conditions {
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
			return
		}
		cond.LastTransitionTime = old.LastTransitionTime
		if old.Status != cond.Status {
			cond.LastTransitionTime = now
		}
		s.Conditions[i] = cond
		return
	}
	cond.LastTransitionTime = now
	s.Conditions = append(s.Conditions, cond)
}

func removeCondition(s *v1.VirtualMachineInstanceReplicaSetStatus, t v1.VirtualMachineInstanceReplicaSetConditionType) {
	var out []v1.VirtualMachineInstanceReplicaSetCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	s.Conditions = out
}
