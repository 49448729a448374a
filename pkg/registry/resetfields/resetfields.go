// Package resetfields names the fields a write path may not change, for every served
// version of kubevirt.io, so server-side apply drops them instead of taking ownership.
package resetfields

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1alpha3"
)

// For returns the reset fields for each served version.
func For(paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1.SchemeGroupVersion.String()):       fieldpath.NewSet(paths...),
		fieldpath.APIVersion(v1alpha3.SchemeGroupVersion.String()): fieldpath.NewSet(paths...),
	}
}

// ForGroupVersions returns the reset fields for the given served versions of another group
// (snapshot.kubevirt.io/v1beta1).
func ForGroupVersions(versions []string, paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	m := map[fieldpath.APIVersion]*fieldpath.Set{}
	for _, v := range versions {
		m[fieldpath.APIVersion(v)] = fieldpath.NewSet(paths...)
	}
	return m
}
