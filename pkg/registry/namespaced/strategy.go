// Package namespaced holds what the strategies of Hangar's kinds share: they are namespaced,
// named by the client (or generateName), never created by an update, updated without
// preconditions when the client sends none, and never canonicalized.
package namespaced

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"
)

// Strategy is embedded by each resource's strategy.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the shared part of a strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{typer, names.SimpleNameGenerator}
}

// NamespaceScoped is true: every kind of Hangar lives in a namespace.
func (Strategy) NamespaceScoped() bool { return true }

// Canonicalize does nothing: stored objects are already in their canonical form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: a PUT of a missing object is a 404, not a create.
func (Strategy) AllowCreateOnUpdate() bool { return false }

// AllowUnconditionalUpdate lets a client update without a resourceVersion.
func (Strategy) AllowUnconditionalUpdate() bool { return true }
