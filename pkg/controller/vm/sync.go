package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
)

// Event reasons on VirtualMachines (KubeVirt's).
const (
	SuccessfulCreateReason = "SuccessfulCreate"
	FailedCreateReason     = "FailedCreate"
	SuccessfulDeleteReason = "SuccessfulDelete"
	FailedDeleteReason     = "FailedDelete"
	SuccessfulAdoptReason  = "SuccessfulAdopt"
)

// orphanFinalizer is set by the API server when a VM is deleted with propagationPolicy
// Orphan: its instance must survive, so the controller leaves it alone.
const orphanFinalizer = metav1.FinalizerOrphanDependents

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.vmLister.VirtualMachines(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.staleVersions.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if c.staleVersions.Stale(key, cached.ResourceVersion, c.clock.Now()) {
		// Our own status write is on its way; its event brings us back.
		return controllerutil.RequeueAfter(controllerutil.StaleVersionTTL)
	}
	vm := cached.DeepCopy()
	if vm.Spec.Template == nil {
		vm.Spec.Template = &v1.VirtualMachineInstanceTemplateSpec{}
	}

	vmi, err := c.vmiLister.VirtualMachineInstances(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		vmi = nil
	}

	var syncErr *syncError
	if vmi != nil {
		if vmi, syncErr = c.claim(ctx, vm, vmi); syncErr != nil {
			vmi = nil // not ours: neither acted upon nor reported
		}
	}

	adds, dels := c.expectations.Pending(key)
	var retryAfter controllerutil.RequeueAfter
	var dataVolumesStatus v1.VirtualMachinePrintableStatus
	switch {
	case syncErr != nil:
	case vm.DeletionTimestamp != nil:
		if vmi != nil && !slices.Contains(vm.Finalizers, orphanFinalizer) {
			syncErr = c.stop(ctx, vm, vmi)
			dels = 1
		}
	case adds > 0 || dels > 0:
		// The cache does not show our last create or delete yet.
	default:
		// The revisions a VM's instance is expanded with are recorded before it starts.
		if changed, err := c.ensureRevisions(ctx, vm); err != nil {
			syncErr = err
			break
		} else if changed {
			break // the status write below brings the VM back, with its revisions stored
		}
		// DataVolumes are made whether the VM runs or not; the instance waits for them.
		var dvs dataVolumeState
		dvs, syncErr = c.syncDataVolumes(ctx, vm)
		dataVolumesStatus = dvs.printable
		act := decide(vm, vmi, c.clock.Now())
		if act.create && vm.Status.RestoreInProgress != nil {
			// The restore is rewriting the spec and the disks: the instance starts after it.
			act.create = false
		}
		if act.create && (syncErr != nil || !dvs.ready) {
			// A DataVolume event brings the VM back.
			act.create = false
		}
		switch {
		case act.create:
			var created *v1.VirtualMachineInstance
			created, syncErr = c.start(ctx, vm)
			if created != nil {
				vmi, adds = created, 1
			}
		case act.delete:
			syncErr = c.stop(ctx, vm, vmi)
			if syncErr == nil {
				dels = 1
			}
		case act.runAlways:
			return c.switchToAlways(ctx, vm)
		case act.addStartRequest:
			vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests, v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest})
		case act.retryAfter > 0:
			retryAfter = controllerutil.RequeueAfter(act.retryAfter)
		}
	}

	if vmi != nil && vm.DeletionTimestamp == nil {
		if vmi, err = c.bumpGeneration(ctx, vm, vmi); err != nil {
			return err
		}
	}

	status := nextStatus(vm, vmi, pending{start: adds > 0, stop: dels > 0, dataVolumes: dataVolumesStatus}, syncErr, c.clock.Now(), c.jitter)
	if !apiequality.Semantic.DeepEqual(status, cached.Status) {
		vm.Status = status
		if _, err := c.kubevirt.KubevirtV1().VirtualMachines(namespace).UpdateStatus(ctx, vm, metav1.UpdateOptions{}); err != nil {
			return errors.Join(errOrNil(syncErr), fmt.Errorf("update status of %s: %w", key, err))
		}
		c.staleVersions.Replaced(key, cached.ResourceVersion, c.clock.Now())
	}
	if syncErr != nil {
		return syncErr
	}
	if retryAfter > 0 {
		return retryAfter
	}
	return nil
}

func errOrNil(e *syncError) error {
	if e == nil {
		return nil
	}
	return e
}

// claim decides whether the instance of the VM's name is the VM's: it is if the VM controls
// it, and becomes so if it has no controller and matches the template's labels (adoption).
func (c *Controller) claim(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) (*v1.VirtualMachineInstance, *syncError) {
	ref := metav1.GetControllerOf(vmi)
	if ref != nil && ref.UID == vm.UID {
		return vmi, nil
	}
	notOurs := &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("VirtualMachineInstance %s/%s exists and is not controlled by this VirtualMachine", vmi.Namespace, vmi.Name)}
	if !adoptable(vm, vmi) {
		return nil, notOurs
	}
	// The cache may be behind: adopt only for a VM that still exists and is not being deleted.
	fresh, err := c.kubevirt.KubevirtV1().VirtualMachines(vm.Namespace).Get(ctx, vm.Name, metav1.GetOptions{})
	if err != nil || fresh.UID != vm.UID || fresh.DeletionTimestamp != nil {
		return nil, notOurs
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             vmi.UID, // a precondition: the same instance we looked at
		"ownerReferences": append(slices.Clone(vmi.OwnerReferences), *metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine"))),
	}})
	if err != nil {
		return nil, &syncError{reason: ReasonFailedCreate, err: err}
	}
	adopted, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Patch(ctx, vmi.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("adopt VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)}
	}
	c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulAdoptReason, "Adopted virtual machine instance %s", vmi.Name)
	return adopted, nil
}

// start creates the instance. A name already taken means the cache is behind, not a failure.
func (c *Controller) start(ctx context.Context, vm *v1.VirtualMachine) (*v1.VirtualMachineInstance, *syncError) {
	expanded, syncErr := c.expanded(ctx, vm)
	if syncErr != nil {
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedCreateReason, "Error creating virtual machine instance: %v", syncErr)
		return nil, syncErr
	}
	vm = expanded
	// The instance waits for its state claim anyway; without the claim it would wait forever.
	if err := c.ensureStateClaim(ctx, vm); err != nil {
		return nil, err
	}
	key := vm.Namespace + "/" + vm.Name
	c.expectations.ExpectCreations(key, 1)
	vmi, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vm.Namespace).Create(ctx, vmiFromVM(vm), metav1.CreateOptions{})
	if err != nil {
		c.expectations.CreationObserved(key)
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedCreateReason, "Error creating virtual machine instance: %v", err)
		return nil, &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("create VirtualMachineInstance %s: %w", key, err)}
	}
	c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulCreateReason, "Started the virtual machine by creating the new virtual machine instance %s", vmi.Name)
	return vmi, nil
}

// stop deletes the instance (the very one seen: a UID precondition).
func (c *Controller) stop(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) *syncError {
	if vmi.DeletionTimestamp != nil {
		return nil
	}
	key, vmiKey := vm.Namespace+"/"+vm.Name, vmi.Namespace+"/"+vmi.Name
	c.expectations.ExpectDeletions(key, vmiKey)
	err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Delete(ctx, vmi.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(vmi.UID)}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		c.expectations.DeletionObserved(key, vmiKey)
		return nil
	}
	if err != nil {
		c.expectations.DeletionObserved(key, vmiKey)
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedDeleteReason, "Error deleting virtual machine instance %s: %v", vmi.Name, err)
		return &syncError{reason: ReasonFailedDelete, err: fmt.Errorf("delete VirtualMachineInstance %s: %w", vmiKey, err)}
	}
	c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulDeleteReason, "Stopped the virtual machine by deleting the virtual machine instance %s", vmi.UID)
	return nil
}

// switchToAlways honours a start request on a Halted VM, as KubeVirt does: the VM becomes
// Always (through whichever of runStrategy and running it uses), and the next sync starts it.
func (c *Controller) switchToAlways(ctx context.Context, vm *v1.VirtualMachine) error {
	if vm.Spec.RunStrategy != nil {
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
	} else {
		vm.Spec.Running = ptr.To(true)
	}
	_, err := c.kubevirt.KubevirtV1().VirtualMachines(vm.Namespace).Update(ctx, vm, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("switch %s/%s to runStrategy Always for a start request: %w", vm.Namespace, vm.Name, err)
	}
	klog.V(2).InfoS("Start request on a Halted VM: switched to Always", "vm", klog.KObj(vm))
	return nil
}

// bumpGeneration marks the instance as current for the VM's generation when the template it
// came from has not changed since, so status.observedGeneration follows spec changes that do
// not need a restart.
func (c *Controller) bumpGeneration(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) (*v1.VirtualMachineInstance, error) {
	current := strconv.FormatInt(vm.Generation, 10)
	if vmi.Annotations[GenerationAnnotation] == current || !templateUnchanged(vm, vmi) {
		return vmi, nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": vmi.ResourceVersion,
		"annotations":     map[string]string{GenerationAnnotation: current},
	}})
	patched, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Patch(ctx, vmi.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return vmi, fmt.Errorf("update %s on %s/%s: %w", GenerationAnnotation, vmi.Namespace, vmi.Name, err)
	}
	return patched, nil
}
