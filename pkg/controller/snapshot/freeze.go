package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// Freezer freezes and thaws a running guest's file systems through its guest agent.
type Freezer interface {
	// Freeze freezes the guest's file systems; the guest thaws by itself after unfreezeTimeout.
	Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error
	Unfreeze(ctx context.Context, namespace, name string) error
}

// APIFreezer calls virt-api's virtualmachineinstances/freeze and unfreeze, as virtctl does:
// virt-api checks the caller's rights (virt-controller's ServiceAccount has them) and carries
// the call to the guest's node.
type APIFreezer struct {
	Client rest.Interface // any client of kube-apiserver; the paths are absolute
}

func (f APIFreezer) Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error {
	body, err := json.Marshal(v1.FreezeUnfreezeTimeout{UnfreezeTimeout: &metav1.Duration{Duration: unfreezeTimeout}})
	if err != nil {
		return err
	}
	return f.Client.Put().AbsPath(subresourcePath(namespace, name, "freeze")).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}

func (f APIFreezer) Unfreeze(ctx context.Context, namespace, name string) error {
	return f.Client.Put().AbsPath(subresourcePath(namespace, name, "unfreeze")).Do(ctx).Error()
}

func subresourcePath(namespace, name, action string) string {
	return fmt.Sprintf("/apis/subresources.kubevirt.io/v1/namespaces/%s/virtualmachineinstances/%s/%s", namespace, name, action)
}

// agentConnected says whether the instance's guest agent is connected.
func agentConnected(vmi *v1.VirtualMachineInstance) bool {
	cond := vmi.Status.Condition(v1.VirtualMachineInstanceAgentConnected)
	return cond != nil && cond.Status == corev1.ConditionTrue
}

// quiesce freezes the VM's running guest before its volumes are snapshotted, and says how
// the snapshot is taken (KubeVirt's indications): none for a stopped VM; Online and
// GuestAgent when the agent froze the file systems; Online and NoGuestAgent without an
// agent; Online and QuiesceFailed when the freeze failed. A failed freeze does not stop the
// snapshot (it is then crash-consistent, as a stopped VM's disks after a power cut), as
// KubeVirt's does not. The guest thaws by itself after the failure deadline whatever happens
// here.
func (c *Controller) quiesce(ctx context.Context, s *snapshotv1beta1.VirtualMachineSnapshot, vm *v1.VirtualMachine) []snapshotv1beta1.Indication {
	vmi, err := c.vmis.VirtualMachineInstances(vm.Namespace).Get(vm.Name)
	if err != nil || vmi.Status.Phase != v1.Running {
		return nil
	}
	online := snapshotv1beta1.VMSnapshotOnlineSnapshotIndication
	if !agentConnected(vmi) || c.clients.Freezer == nil {
		return []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotNoGuestAgentIndication}
	}
	timeout := failureDeadline(s)
	if timeout == 0 {
		timeout = defaultFailureDeadline
	}
	if err := c.clients.Freezer.Freeze(ctx, vm.Namespace, vm.Name, timeout); err != nil {
		c.recorder.Eventf(s, corev1.EventTypeWarning, "FreezeFailed", "Freezing the file systems of %s failed; the snapshot is taken without: %v", vm.Name, err)
		return []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotQuiesceFailedIndication}
	}
	c.recorder.Eventf(s, corev1.EventTypeNormal, "FileSystemsFrozen", "Froze the file systems of %s through its guest agent", vm.Name)
	return []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotGuestAgentIndication}
}

// thaw unfreezes the guest a snapshot froze, once its volumes are cut (or the snapshot is
// over). Thawing a thawed guest is harmless, so it is repeated until the snapshot ends; an
// instance gone has nothing to thaw.
func (c *Controller) thaw(ctx context.Context, s *snapshotv1beta1.VirtualMachineSnapshot) {
	if c.clients.Freezer == nil || s.Status == nil || !slices.Contains(s.Status.Indications, snapshotv1beta1.VMSnapshotGuestAgentIndication) {
		return
	}
	err := c.clients.Freezer.Unfreeze(ctx, s.Namespace, s.Spec.Source.Name)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or no longer running: nothing of the guest's is frozen.
	default:
		klog.ErrorS(err, "thaw after snapshot; the guest thaws by itself after the failure deadline",
			"snapshot", klog.KObj(s), "vmi", s.Spec.Source.Name)
		c.recorder.Eventf(s, corev1.EventTypeWarning, "UnfreezeFailed", "Thawing the file systems of %s failed: %v", s.Spec.Source.Name, err)
	}
}
