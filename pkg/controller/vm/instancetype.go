package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
)

// A VM that names an instance type or a preference keeps the version it first used, as
// KubeVirt keeps it: the controller copies the object into a ControllerRevision of the VM's
// namespace, owned by the VM (the garbage collector removes it with the VM), and records it in
// status.instancetypeRef / preferenceRef. virt-api then expands the VM's template with that
// revision, never with the object as it is now, so editing or deleting an instance type does
// not change the VMs that use it. A VM moves to another version when its spec names another
// instance type, or a revision (spec.instancetype.revisionName). The revision is named as
// KubeVirt names it, <VM>-<object>-<object's UID>-<object's generation>: the same version
// always gives the same name, so a revision created by an earlier attempt is taken as it is.
//
// The instance is made from the VM as virt-api expands it (the expand-spec subresource), so
// the instance, its launcher pod and the namespace's quotas see the instance type's CPU and
// memory, and there is one implementation of the expansion.

// Event reasons of revisions.
const (
	SuccessfulCreateRevisionReason = "SuccessfulCreateControllerRevision"
	FailedCreateRevisionReason     = "FailedCreateControllerRevision"
)

// ReasonInstancetypeRevision is the Failure condition's reason when the revision cannot be made.
const ReasonInstancetypeRevision = "FailedInstancetypeRevision"

// Expander returns a VM as virt-api expands it (expand-spec).
type Expander func(ctx context.Context, namespace, name string) (*v1.VirtualMachine, error)

// instancetypes is what keeping revisions takes; nil on a controller that keeps none.
type instancetypes struct {
	kube          kubernetes.Interface
	instancetypes instancetypeclient.Interface
	expand        Expander
}

// EnableInstancetypes makes the controller keep the revisions of VMs' instance types and
// preferences and make instances from expanded VMs.
func (c *Controller) EnableInstancetypes(kube kubernetes.Interface, it instancetypeclient.Interface, expand Expander) {
	c.instancetypes = &instancetypes{kube: kube, instancetypes: it, expand: expand}
}

// ExpandWith returns an Expander on virt-api's expand-spec, read by get as JSON.
func ExpandWith(get func(ctx context.Context, namespace, name string) ([]byte, error)) Expander {
	return func(ctx context.Context, namespace, name string) (*v1.VirtualMachine, error) {
		raw, err := get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		vm := &v1.VirtualMachine{}
		if err := json.Unmarshal(raw, vm); err != nil {
			return nil, fmt.Errorf("expand-spec of %s/%s: %w", namespace, name, err)
		}
		return vm, nil
	}
}

// namesInstancetype says whether the VM's instance is made by expansion.
func namesInstancetype(vm *v1.VirtualMachine) bool {
	return vm.Spec.Instancetype != nil || vm.Spec.Preference != nil
}

// ensureRevisions records in vm.Status the revisions of the VM's instance type and
// preference, making them when needed. changed says the status gained a reference, which
// must be stored before the VM is expanded.
func (c *Controller) ensureRevisions(ctx context.Context, vm *v1.VirtualMachine) (changed bool, err *syncError) {
	if c.instancetypes == nil {
		return false, nil
	}
	if m := vm.Spec.Instancetype; m != nil {
		ref, created, err := c.revisionRef(ctx, vm, vm.Status.InstancetypeRef, m.Kind, m.Name, m.RevisionName, true)
		if err != nil {
			return false, err
		}
		changed = changed || created
		vm.Status.InstancetypeRef = ref
	} else {
		vm.Status.InstancetypeRef = nil
	}
	if m := vm.Spec.Preference; m != nil {
		ref, created, err := c.revisionRef(ctx, vm, vm.Status.PreferenceRef, m.Kind, m.Name, m.RevisionName, false)
		if err != nil {
			return false, err
		}
		changed = changed || created
		vm.Status.PreferenceRef = ref
	} else {
		vm.Status.PreferenceRef = nil
	}
	return changed, nil
}

// normalizedKind is KubeVirt's kind for a matcher's: the cluster-wide one when empty.
func normalizedKind(kind string, instancetype bool) string {
	namespaced, cluster := "VirtualMachinePreference", "VirtualMachineClusterPreference"
	if instancetype {
		namespaced, cluster = "VirtualMachineInstancetype", "VirtualMachineClusterInstancetype"
	}
	if strings.EqualFold(kind, namespaced) {
		return namespaced
	}
	return cluster
}

// revisionRef returns the status reference for a matcher: the current one when it is for the
// same object, else one to the named revision, else to a new revision of the object as it is.
func (c *Controller) revisionRef(ctx context.Context, vm *v1.VirtualMachine, current *v1.InstancetypeStatusRef,
	kind, name, revisionName string, isInstancetype bool) (*v1.InstancetypeStatusRef, bool, *syncError) {
	kind = normalizedKind(kind, isInstancetype)
	if current != nil && current.Kind == kind && current.Name == name && current.ControllerRevisionRef != nil &&
		(revisionName == "" || current.ControllerRevisionRef.Name == revisionName) {
		return current, false, nil
	}
	ref := &v1.InstancetypeStatusRef{Kind: kind, Name: name}
	if revisionName != "" {
		ref.ControllerRevisionRef = &v1.ControllerRevisionRef{Name: revisionName}
		return ref, true, nil
	}
	obj, meta, err := c.getInstancetypeOrPreference(ctx, vm.Namespace, kind, name)
	if err != nil {
		return nil, false, &syncError{reason: ReasonInstancetypeRevision, err: fmt.Errorf("read %s %s: %w", kind, name, err)}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, false, &syncError{reason: ReasonInstancetypeRevision, err: err}
	}
	owner := metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine"))
	owner.BlockOwnerDeletion = nil
	revision := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("%s-%s-%s-%d", vm.Name, meta.Name, meta.UID, meta.Generation),
			Namespace:       vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{*owner},
			Labels:          map[string]string{revisionObjectKindLabel: kind, revisionObjectNameLabel: name},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: meta.Generation,
	}
	_, err = c.instancetypes.kube.AppsV1().ControllerRevisions(vm.Namespace).Create(ctx, revision, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// The same name holds the same version: made by an earlier sync whose status write was lost.
	case err != nil:
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedCreateRevisionReason, "Error creating ControllerRevision %s: %v", revision.Name, err)
		return nil, false, &syncError{reason: ReasonInstancetypeRevision, err: fmt.Errorf("create ControllerRevision %s/%s: %w", vm.Namespace, revision.Name, err)}
	default:
		c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulCreateRevisionReason, "Created ControllerRevision %s of %s %s", revision.Name, kind, name)
	}
	ref.ControllerRevisionRef = &v1.ControllerRevisionRef{Name: revision.Name}
	return ref, true, nil
}

// Labels of the revisions, as KubeVirt labels them.
const (
	revisionObjectKindLabel = "instancetype.kubevirt.io/object-kind"
	revisionObjectNameLabel = "instancetype.kubevirt.io/object-name"
)

// getInstancetypeOrPreference reads the object a matcher names, with its apiVersion and kind
// set (the revision holds the whole object, as KubeVirt's do).
func (c *Controller) getInstancetypeOrPreference(ctx context.Context, namespace, kind, name string) (runtime.Object, *metav1.ObjectMeta, error) {
	api := c.instancetypes.instancetypes.InstancetypeV1beta1()
	opts := metav1.GetOptions{}
	var obj runtime.Object
	var meta *metav1.ObjectMeta
	switch kind {
	case instancetypev1beta1.KindInstancetype:
		o, err := api.VirtualMachineInstancetypes(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, nil, err
		}
		obj, meta = o, &o.ObjectMeta
	case instancetypev1beta1.KindClusterInstancetype:
		o, err := api.VirtualMachineClusterInstancetypes().Get(ctx, name, opts)
		if err != nil {
			return nil, nil, err
		}
		obj, meta = o, &o.ObjectMeta
	case instancetypev1beta1.KindPreference:
		o, err := api.VirtualMachinePreferences(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, nil, err
		}
		obj, meta = o, &o.ObjectMeta
	default:
		o, err := api.VirtualMachineClusterPreferences().Get(ctx, name, opts)
		if err != nil {
			return nil, nil, err
		}
		obj, meta = o, &o.ObjectMeta
	}
	meta.ManagedFields = nil
	obj.GetObjectKind().SetGroupVersionKind(instancetypev1beta1.SchemeGroupVersion.WithKind(kind))
	return obj, meta, nil
}

// expanded is the VM its instance is made from: as virt-api expands it when the VM names an
// instance type or preference, the VM itself otherwise.
func (c *Controller) expanded(ctx context.Context, vm *v1.VirtualMachine) (*v1.VirtualMachine, *syncError) {
	if !namesInstancetype(vm) || c.instancetypes == nil {
		return vm, nil
	}
	out, err := c.instancetypes.expand(ctx, vm.Namespace, vm.Name)
	if err != nil {
		return nil, &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("expand %s/%s: %w", vm.Namespace, vm.Name, err)}
	}
	if out.UID != vm.UID {
		return nil, &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("expand %s/%s: another VM of that name (%s)", vm.Namespace, vm.Name, out.UID)}
	}
	// The expansion is of the stored VM; the controller's own view of what it asked for
	// (a paused start, the generation) is this sync's.
	out.ObjectMeta, out.Status, out.Spec.RunStrategy, out.Spec.Running = vm.ObjectMeta, vm.Status, vm.Spec.RunStrategy, vm.Spec.Running
	return out, nil
}
