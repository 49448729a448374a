package replicaset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	vmicontroller "github.com/hangarvm/hangar/pkg/controller/vmi"
)

// Event reasons on sets (KubeVirt's).
const (
	SuccessfulCreateReason = "SuccessfulCreate"
	FailedCreateReason     = "FailedCreate"
	SuccessfulDeleteReason = "SuccessfulDelete"
	FailedDeleteReason     = "FailedDelete"
	SuccessfulPausedReason = "SuccessfulPaused"
	SuccessfulResumeReason = "SuccessfulResumed"
)

var rsKind = v1.SchemeGroupVersion.WithKind("VirtualMachineInstanceReplicaSet")

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.rsLister.VirtualMachineInstanceReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	rs := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "InvalidSelector", "Invalid selector: %v", err)
		return nil // validation should have refused it; retrying cannot help
	}

	all, err := c.vmiLister.VirtualMachineInstances(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	owned, err := c.claim(ctx, rs, selector, all)
	if err != nil {
		return err
	}

	var active, finished []*v1.VirtualMachineInstance
	for _, vmi := range owned {
		switch {
		case vmi.DeletionTimestamp != nil:
		case vmi.Status.Phase == v1.Succeeded || vmi.Status.Phase == v1.Failed:
			finished = append(finished, vmi)
		default:
			active = append(active, vmi)
		}
	}

	var scaleErr error
	if !rs.Spec.Paused && rs.DeletionTimestamp == nil && c.expectations.Satisfied(key) {
		// Finished instances make room for new ones.
		scaleErr = c.deleteVMIs(ctx, rs, finished)
		if scaleErr == nil {
			scaleErr = c.scale(ctx, rs, active)
		}
	}

	status := nextStatus(rs, selector, active, scaleErr, metav1.Now())
	if c.pausedChanged(rs) {
		reason, msg := SuccessfulResumeReason, "Resumed"
		if rs.Spec.Paused {
			reason, msg = SuccessfulPausedReason, "Paused"
		}
		c.recorder.Event(rs, corev1.EventTypeNormal, reason, msg)
	}
	if !apiequality.Semantic.DeepEqual(status, cached.Status) {
		rs.Status = status
		if _, err := c.kubevirt.KubevirtV1().VirtualMachineInstanceReplicaSets(namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
			return errors.Join(scaleErr, fmt.Errorf("update status of %s: %w", key, err))
		}
	}
	return scaleErr
}

// pausedChanged: the Paused condition does not yet say what spec.paused does.
func (c *Controller) pausedChanged(rs *v1.VirtualMachineInstanceReplicaSet) bool {
	has := false
	for _, cond := range rs.Status.Conditions {
		has = has || (cond.Type == v1.VirtualMachineInstanceReplicaSetReplicaPaused && cond.Status == corev1.ConditionTrue)
	}
	return has != rs.Spec.Paused && (rs.Spec.Paused || has)
}

// claim returns the instances the set owns after adopting matching orphans and releasing
// owned instances that no longer match.
func (c *Controller) claim(ctx context.Context, rs *v1.VirtualMachineInstanceReplicaSet, selector labels.Selector,
	all []*v1.VirtualMachineInstance) ([]*v1.VirtualMachineInstance, error) {
	var owned []*v1.VirtualMachineInstance
	var errs []error
	canAdopt := rs.DeletionTimestamp == nil
	rechecked := false
	for _, vmi := range all {
		ref := metav1.GetControllerOf(vmi)
		matches := selector.Matches(labels.Set(vmi.Labels))
		switch {
		case ref != nil && ref.UID == rs.UID && matches:
			owned = append(owned, vmi)
		case ref != nil && ref.UID == rs.UID:
			if err := c.release(ctx, vmi, rs.UID); err != nil {
				errs = append(errs, err)
			}
		case ref == nil && matches && canAdopt && vmi.DeletionTimestamp == nil:
			if !rechecked {
				// The cache may be behind: adopt only for a set that exists and is not being deleted.
				fresh, err := c.kubevirt.KubevirtV1().VirtualMachineInstanceReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				canAdopt, rechecked = fresh.UID == rs.UID && fresh.DeletionTimestamp == nil, true
				if !canAdopt {
					continue
				}
			}
			adopted, err := c.adopt(ctx, rs, vmi)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			owned = append(owned, adopted)
		}
	}
	return owned, errors.Join(errs...)
}

func (c *Controller) adopt(ctx context.Context, rs *v1.VirtualMachineInstanceReplicaSet, vmi *v1.VirtualMachineInstance) (*v1.VirtualMachineInstance, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             vmi.UID,
		"ownerReferences": append(slices.Clone(vmi.OwnerReferences), *metav1.NewControllerRef(rs, rsKind)),
	}})
	adopted, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Patch(ctx, vmi.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopt %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return adopted, nil
}

func (c *Controller) release(ctx context.Context, vmi *v1.VirtualMachineInstance, owner types.UID) error {
	refs := slices.DeleteFunc(slices.Clone(vmi.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == owner })
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": vmi.UID, "ownerReferences": refs}})
	_, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Patch(ctx, vmi.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return nil
}

// scale creates or deletes instances until the set has spec.replicas, at most burst at a time.
func (c *Controller) scale(ctx context.Context, rs *v1.VirtualMachineInstanceReplicaSet, active []*v1.VirtualMachineInstance) error {
	want := int(ptr.Deref(rs.Spec.Replicas, 1))
	diff := len(active) - want
	switch {
	case diff < 0:
		return c.createVMIs(ctx, rs, min(-diff, c.burst))
	case diff > 0:
		return c.deleteVMIs(ctx, rs, deletionOrder(active)[:min(diff, c.burst)])
	}
	return nil
}

// createVMIs creates n instances in growing batches (1, 2, 4, ...), stopping at the first
// batch with an error, so a set that cannot create (quota, admission) fails fast.
func (c *Controller) createVMIs(ctx context.Context, rs *v1.VirtualMachineInstanceReplicaSet, n int) error {
	key := rs.Namespace + "/" + rs.Name
	c.expectations.ExpectCreations(key, n)
	for batch, done := 1, 0; done < n; batch *= 2 {
		size := min(batch, n-done)
		var wg sync.WaitGroup
		errs := make([]error, size)
		for i := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				vmi, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(rs.Namespace).Create(ctx, vmiFromTemplate(rs), metav1.CreateOptions{})
				if err != nil {
					c.expectations.CreationObserved(key)
					c.recorder.Eventf(rs, corev1.EventTypeWarning, FailedCreateReason, "Error creating VMI: %v", err)
					errs[i] = err
					return
				}
				c.recorder.Eventf(rs, corev1.EventTypeNormal, SuccessfulCreateReason, "Created virtual machine instance: %s", vmi.Name)
			}()
		}
		wg.Wait()
		done += size
		if err := errors.Join(errs...); err != nil {
			for range n - done {
				c.expectations.CreationObserved(key) // never attempted
			}
			return &replicaError{reason: FailedCreateReason, err: fmt.Errorf("create instances of %s: %w", key, err)}
		}
	}
	return nil
}

func (c *Controller) deleteVMIs(ctx context.Context, rs *v1.VirtualMachineInstanceReplicaSet, vmis []*v1.VirtualMachineInstance) error {
	key := rs.Namespace + "/" + rs.Name
	var errs []error
	for _, vmi := range vmis {
		c.expectations.ExpectDeletions(key, vmiKey(vmi))
		err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Delete(ctx, vmi.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(vmi.UID)}})
		if err != nil {
			c.expectations.DeletionObserved(key, vmiKey(vmi))
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue
			}
			c.recorder.Eventf(rs, corev1.EventTypeWarning, FailedDeleteReason, "Error deleting virtual machine instance %s: %v", vmi.Name, err)
			errs = append(errs, err)
			continue
		}
		c.recorder.Eventf(rs, corev1.EventTypeNormal, SuccessfulDeleteReason, "Deleted virtual machine instance: %s", vmi.UID)
	}
	if err := errors.Join(errs...); err != nil {
		return &replicaError{reason: FailedDeleteReason, err: fmt.Errorf("delete instances of %s: %w", key, err)}
	}
	return nil
}

// deletionOrder puts first the instances that cost least to lose: not yet on a node, then not
// ready, then the youngest.
func deletionOrder(vmis []*v1.VirtualMachineInstance) []*v1.VirtualMachineInstance {
	out := slices.Clone(vmis)
	rank := func(vmi *v1.VirtualMachineInstance) int {
		switch {
		case vmi.Status.NodeName == "":
			return 0
		case !isReady(vmi):
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		return out[j].CreationTimestamp.Before(&out[i].CreationTimestamp)
	})
	return out
}

// vmiFromTemplate is a new instance of the set: named after it, with the template's metadata
// and spec and a controller reference to the set.
func vmiFromTemplate(rs *v1.VirtualMachineInstanceReplicaSet) *v1.VirtualMachineInstance {
	tmpl := rs.Spec.Template
	if tmpl == nil {
		tmpl = &v1.VirtualMachineInstanceTemplateSpec{}
	}
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name,
			Namespace:       rs.Namespace,
			Labels:          maps(tmpl.ObjectMeta.Labels),
			Annotations:     maps(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)},
			// Set here rather than by the instance controller: one write less per instance.
			Finalizers: []string{vmicontroller.Finalizer},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	return vmi
}

func maps(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
