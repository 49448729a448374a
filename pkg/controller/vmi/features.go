package vmi

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// ReasonSoftwareEmulation is the reason of FeaturesDropped: the launcher pod runs the guest
// under QEMU's TCG (useEmulation), which lacks what the spec asks of KVM.
const ReasonSoftwareEmulation = "SoftwareEmulation"

// setFeaturesDropped says on the instance which of its spec's fields its launcher leaves out
// because the pod runs under software emulation: the guest boots without them rather than
// fail (the launcher drops them from the domain), and the user sees why. The pod's own
// setting counts, not the cluster's current one, which may have changed since.
func setFeaturesDropped(s *v1.VirtualMachineInstanceStatus, vmi *v1.VirtualMachineInstance, pod *corev1.Pod, now metav1.Time) {
	dropped := vmi.Spec.KVMOnlyFeatures()
	if !podUsesEmulation(pod) || len(dropped) == 0 {
		s.RemoveCondition(v1.VirtualMachineInstanceFeaturesDropped)
		return
	}
	s.SetCondition(v1.VirtualMachineInstanceCondition{
		Type: v1.VirtualMachineInstanceFeaturesDropped, Status: corev1.ConditionTrue, Reason: ReasonSoftwareEmulation,
		Message: "software emulation (useEmulation) offers no " + strings.Join(prefixed("spec.", dropped), ", ") +
			": the guest runs without them",
	}, now)
}

func podUsesEmulation(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == layout.EnvEmulation {
				return e.Value == "true"
			}
		}
	}
	return false
}

func prefixed(prefix string, in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = prefix + s
	}
	return out
}
