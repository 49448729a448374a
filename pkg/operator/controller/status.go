package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// status is the status a reconcile works out; writeStatus stores it when it changed.
type status struct {
	operatorv1alpha1.HangarStatus
	generation int64
	version    string
	// done: every phase is rolled out at this version.
	done bool
	// degradedSet: something set Degraded this reconcile.
	degradedSet bool
	progressSet bool
}

func newStatus(h *operatorv1alpha1.Hangar, version string) *status {
	s := &status{HangarStatus: *h.Status.DeepCopy(), generation: h.Generation, version: version}
	s.TargetVersion = version
	s.ObservedGeneration = h.Generation
	return s
}

func (s *status) set(conditionType string, value bool, reason, message string) {
	st := metav1.ConditionFalse
	if value {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: conditionType, Status: st, Reason: reason,
		Message: message, ObservedGeneration: s.generation})
}

// degraded says what keeps the installation from its spec; nothing progresses meanwhile.
func (s *status) degraded(reason, message string) {
	s.degradedSet = true
	s.set(operatorv1alpha1.ConditionDegraded, true, reason, message)
	if !s.progressSet {
		s.set(operatorv1alpha1.ConditionProgressing, false, reason, "blocked: "+message)
	}
	if s.ObservedVersion == "" {
		s.Phase = operatorv1alpha1.PhaseDeploying
		s.set(operatorv1alpha1.ConditionAvailable, false, reason, message)
	}
}

// progressing says what the operator is rolling out.
func (s *status) progressing(reason, message string) {
	s.progressSet = true
	s.set(operatorv1alpha1.ConditionProgressing, true, reason, message)
	if s.ObservedVersion != s.version {
		s.Phase = operatorv1alpha1.PhaseDeploying
	}
}

// deployed records that every component runs this version and spec.
func (s *status) deployed() {
	s.done = true
	s.ObservedVersion = s.version
	s.Phase = operatorv1alpha1.PhaseDeployed
	s.set(operatorv1alpha1.ConditionProgressing, false, ReasonDeployed, "every component runs "+s.version)
}

// available records whether Hangar serves. A first installation is available only once it is
// deployed; after that, while its pods serve (an upgrade replaces them one at a time).
func (s *status) available(serving bool, why string) {
	switch {
	case s.ObservedVersion == "":
		s.set(operatorv1alpha1.ConditionAvailable, false, ReasonDeploying, "Hangar is being deployed")
	case serving:
		s.set(operatorv1alpha1.ConditionAvailable, true, ReasonAsExpected, "Hangar serves the kubevirt.io API and runs guests")
	default:
		s.set(operatorv1alpha1.ConditionAvailable, false, ReasonUnavailable, why)
	}
	if !s.degradedSet {
		s.set(operatorv1alpha1.ConditionDegraded, false, ReasonAsExpected, "")
	}
}

// writeStatus stores st when it differs from h's.
func (c *Controller) writeStatus(ctx context.Context, h *operatorv1alpha1.Hangar, st *status) error {
	if equality.Semantic.DeepEqual(h.Status, st.HangarStatus) {
		return nil
	}
	h.Status = st.HangarStatus
	_, err := c.clients.Operator.HangarvmV1alpha1().Hangars().UpdateStatus(ctx, h, metav1.UpdateOptions{})
	return err
}
