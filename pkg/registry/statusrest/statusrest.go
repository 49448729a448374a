// Package statusrest serves the status subresource of any generic-registry resource: a copy
// of the main store whose update strategy keeps the spec and takes only the status.
package statusrest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusStrategy is what a status update strategy must provide.
type StatusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// REST serves <resource>/status.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &REST{}
	_ rest.TableConvertor      = &REST{}
	_ rest.ResetFieldsStrategy = &REST{}
)

// New returns the status endpoint of the main store, with the given strategy for updates.
func New(main *genericregistry.Store, strategy StatusStrategy) *REST {
	store := *main
	store.UpdateStrategy = strategy
	store.ResetFieldsStrategy = strategy
	return &REST{store: &store}
}

// New returns an empty object of the resource.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource owns the storage.
func (r *REST) Destroy() {}

// Get returns the object, for patches of its status.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status; spec changes are dropped by the strategy.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// A subresource never creates its parent.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields the status endpoint leaves alone.
func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object as the main resource does.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
