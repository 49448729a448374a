package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets one condition of type t in conds (the snapshot, restore, clone and export
// controllers' conditions, all of this type), keeping its times when nothing changed so that
// a resync writes nothing; the transition time moves only when the status does.
func SetCondition(conds []Condition, t ConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) []Condition {
	for i := range conds {
		if conds[i].Type != t {
			continue
		}
		if conds[i].Status == status && conds[i].Reason == reason && conds[i].Message == message {
			return conds
		}
		if conds[i].Status != status {
			conds[i].LastTransitionTime = now
		}
		conds[i].Status, conds[i].Reason, conds[i].Message, conds[i].LastProbeTime = status, reason, message, now
		return conds
	}
	return append(conds, Condition{Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now})
}

// FindCondition is the condition of type t in conds, or nil.
func FindCondition(conds []Condition, t ConditionType) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
