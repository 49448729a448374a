package virtualmachineinstancereplicaset

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// ScaleREST serves virtualmachineinstancereplicasets/scale as autoscaling/v1 Scale, so
// `kubectl scale` and autoscalers work as on a ReplicaSet.
type ScaleREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// GroupVersionKind says the endpoint speaks autoscaling/v1 Scale, whatever the parent's version.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New returns an empty (internal) Scale.
func (r *ScaleREST) New() runtime.Object { return &scalescheme.Scale{} }

// Destroy does nothing: the main resource owns the storage.
func (r *ScaleREST) Destroy() {}

// Get returns the replica set's scale.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return scaleOf(obj.(*kubevirt.VirtualMachineInstanceReplicaSet)), nil
}

// Update sets spec.replicas from a Scale; nothing else of the replica set changes. Admission
// sees Scale objects, as it does for a ReplicaSet's scale.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name,
		&scaleUpdatedObjectInfo{name: name, scaleInfo: objInfo},
		func(ctx context.Context, obj runtime.Object) error {
			return createValidation(ctx, scaleOf(obj.(*kubevirt.VirtualMachineInstanceReplicaSet)))
		},
		func(ctx context.Context, obj, old runtime.Object) error {
			return updateValidation(ctx, scaleOf(obj.(*kubevirt.VirtualMachineInstanceReplicaSet)),
				scaleOf(old.(*kubevirt.VirtualMachineInstanceReplicaSet)))
		},
		false, options)
	if err != nil {
		return nil, false, err
	}
	return scaleOf(obj.(*kubevirt.VirtualMachineInstanceReplicaSet)), false, nil
}

// scaleOf presents a replica set as a Scale.
func scaleOf(rs *kubevirt.VirtualMachineInstanceReplicaSet) *scalescheme.Scale {
	// autoscaling/v1 carries the selector in string form; the conversion renders it.
	var replicas int32
	if rs.Spec.Replicas != nil {
		replicas = *rs.Spec.Replicas
	}
	return &scalescheme.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              rs.Name,
			Namespace:         rs.Namespace,
			UID:               rs.UID,
			ResourceVersion:   rs.ResourceVersion,
			CreationTimestamp: rs.CreationTimestamp,
		},
		Spec:   scalescheme.ScaleSpec{Replicas: replicas},
		Status: scalescheme.ScaleStatus{Replicas: rs.Status.Replicas, Selector: rs.Spec.Selector.DeepCopy()},
	}
}

// scaleUpdatedObjectInfo turns the client's Scale into the updated replica set.
type scaleUpdatedObjectInfo struct {
	name      string
	scaleInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.scaleInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	old, ok := oldObj.(*kubevirt.VirtualMachineInstanceReplicaSet)
	if !ok || old == nil {
		return nil, apierrors.NewNotFound(kubevirt.Resource("virtualmachineinstancereplicasets/scale"), i.name)
	}
	obj, err := i.scaleInfo.UpdatedObject(ctx, scaleOf(old))
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*scalescheme.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", obj))
	}
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), i.name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"),
		})
	}
	rs := old.DeepCopy()
	rs.Spec.Replicas = &scale.Spec.Replicas
	// A resourceVersion in the Scale is an optimistic-concurrency precondition on the set.
	rs.ResourceVersion = scale.ResourceVersion
	return rs, nil
}
