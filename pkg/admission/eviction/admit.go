// Package eviction turns the eviction of a launcher pod into the evacuation of its
// instance, as KubeVirt's pod eviction admitter does: a validating webhook on pods/eviction,
// served by virt-api. For an instance whose eviction strategy asks for a migration, the
// eviction is refused with 429 (kubectl drain retries it) and the instance is marked with
// status.evacuationNodeName, which the evacuation controller turns into a migration; once the
// instance has left, the pod goes with it and the drain's retry finds nothing left to evict.
//
// The webhook trusts nothing in the review but the pod's namespace and name and the dry-run
// flag: the pod, the instance and its strategy are read from the API, and only a pod the
// controller recorded as one of the instance's (status.activePods, written by virt-controller
// alone) counts as its launcher; a pod that merely carries the launcher's label and
// annotation is evicted like any other.
package eviction

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Path is where virt-api serves the webhook (KubeVirt's path).
const Path = "/pod-eviction-validate"

// Pods reads a pod from kube-apiserver.
type Pods interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Instances reads instances and marks them for evacuation.
type Instances interface {
	Get(ctx context.Context, namespace, name string) (*kubevirt.VirtualMachineInstance, error)
	// MarkForEvacuation sets status.evacuationNodeName of the instance (of that UID) to node;
	// with dryRun it checks and writes nothing.
	MarkForEvacuation(ctx context.Context, vmi *kubevirt.VirtualMachineInstance, node string, dryRun bool) error
}

// Admitter decides on evictions.
type Admitter struct {
	pods      Pods
	instances Instances
	// clusterStrategy is the cluster configuration's evictionStrategy ("" when unset).
	clusterStrategy func() kubevirt.EvictionStrategy
}

// New returns an admitter.
func New(pods Pods, instances Instances, clusterStrategy func() kubevirt.EvictionStrategy) *Admitter {
	return &Admitter{pods: pods, instances: instances, clusterStrategy: clusterStrategy}
}

// evictionFmt is KubeVirt's message, which the descheduler looks for.
const evictionFmt = "Eviction triggered evacuation of VMI \"%s/%s\""

// Admit answers one eviction review.
func (a *Admitter) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	pod, err := a.pods.GetPod(ctx, req.Namespace, req.Name)
	if err != nil {
		// Not ours to protect (or gone): the eviction itself will say what is wrong.
		return allowed()
	}
	if pod.Labels[v1.AppLabel] != v1.LauncherAppLabelValue || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return allowed()
	}
	vmiName, ok := pod.Annotations[layout.DomainAnnotation]
	if !ok {
		return allowed()
	}
	vmi, err := a.instances.Get(ctx, pod.Namespace, vmiName)
	if apierrors.IsNotFound(err) {
		return allowed()
	}
	if err != nil {
		return denied(fmt.Sprintf("kubevirt failed getting the vmi: %v", err))
	}
	if _, ours := vmi.Status.ActivePods[pod.UID]; !ours {
		// A pod dressed as the instance's launcher, or one the controller has not recorded:
		// evicting it cannot touch the guest, so it gets no protection and no say.
		return allowed()
	}
	strategy := vmi.Spec.EvictionStrategy
	if strategy == nil {
		if s := a.clusterStrategy(); s != "" {
			strategy = &s
		}
	}
	if strategy == nil {
		return allowed()
	}
	migratable := isMigratable(vmi)
	mark := false
	switch *strategy {
	case kubevirt.EvictionStrategyLiveMigrate:
		if !migratable {
			return denied(fmt.Sprintf("VMI %s is configured with an eviction strategy but is not live-migratable", vmi.Name))
		}
		mark = true
	case kubevirt.EvictionStrategyLiveMigrateIfPossible:
		mark = migratable
	case kubevirt.EvictionStrategyExternal:
		mark = true
	}
	if !mark {
		return allowed()
	}
	if vmi.Status.EvacuationNodeName != "" {
		return denied(fmt.Sprintf("Evacuation in progress: "+evictionFmt, vmi.Namespace, vmi.Name))
	}
	if vmi.Status.NodeName != pod.Spec.NodeName {
		// The target pod of a migration in flight: evicting it only fails the migration.
		return denied("Eviction request for target Pod")
	}
	if err := a.instances.MarkForEvacuation(ctx, vmi, pod.Spec.NodeName, isDryRun(req)); err != nil {
		return denied(fmt.Sprintf("kubevirt failed marking the vmi for eviction: %v", err))
	}
	klog.InfoS("Eviction of a launcher pod turned into an evacuation", "vmi", klog.KObj(vmi), "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	return denied(fmt.Sprintf(evictionFmt, vmi.Namespace, vmi.Name))
}

// isMigratable is KubeVirt's test: the LiveMigratable condition is True (an instance not yet
// assessed is not migratable).
func isMigratable(vmi *kubevirt.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirt.VirtualMachineInstanceIsMigratable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isDryRun says whether the eviction changes nothing: the review's dryRun, or the eviction's
// deleteOptions.dryRun.
func isDryRun(req *admissionv1.AdmissionRequest) bool {
	if req.DryRun != nil && *req.DryRun {
		return true
	}
	var eviction policyv1.Eviction
	if err := decodeEviction(req.Object.Raw, &eviction); err == nil && eviction.DeleteOptions != nil {
		for _, d := range eviction.DeleteOptions.DryRun {
			if d == metav1.DryRunAll {
				return true
			}
		}
	}
	return false
}

func allowed() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

// denied refuses with 429, so kubectl drain and the descheduler retry.
func denied(message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Message: message, Reason: metav1.StatusReasonTooManyRequests, Code: http.StatusTooManyRequests}}
}
