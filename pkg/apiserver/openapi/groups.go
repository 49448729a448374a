package openapi

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// subresourcesGroup is KubeVirt's group of actions and streams, whose operations KubeVirt names
// after its routes, not after Kubernetes' verbs.
const subresourcesGroup = "subresources.kubevirt.io"

// IsKubeVirtGroup says whether group is one of KubeVirt's API groups (kubevirt.io,
// instancetype.kubevirt.io, ...), whose models, operation IDs and v2 operations are shaped as
// KubeVirt's OpenAPI has them.
func IsKubeVirtGroup(group string) bool {
	return group == "kubevirt.io" || strings.HasSuffix(group, ".kubevirt.io")
}

// kubeVirtGroups is what the naming needs to know of the KubeVirt groups of a scheme: the
// version each Go package of API types is named by, and the version of each group whose
// operations KubeVirt names without group and version. Both come from the scheme, so a group
// registered in it is named as KubeVirt names it with nothing added here.
type kubeVirtGroups struct {
	// packageVersion maps the Go import path of a KubeVirt group's types to the version its
	// models are named by (v1 for kubevirt.io/v1's package, v1beta1 for instancetype's):
	// the group's most preferred version that registers the package's types.
	packageVersion map[string]string
	// preferred maps each KubeVirt group to its most preferred version.
	preferred map[string]string
}

func newKubeVirtGroups(schemes ...*runtime.Scheme) kubeVirtGroups {
	g := kubeVirtGroups{packageVersion: map[string]string{}, preferred: map[string]string{}}
	for _, scheme := range schemes {
		// Packages by group, then each package's versions in the group's order of preference.
		// A package that registers types outside the KubeVirt groups too is not theirs:
		// meta/v1 adds its options and WatchEvent to every group version.
		packages := map[string]map[string][]string{}
		foreign := map[string]bool{}
		for gvk, typ := range scheme.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal {
				continue
			}
			if !IsKubeVirtGroup(gvk.Group) {
				foreign[typ.PkgPath()] = true
			}
		}
		for gvk, typ := range scheme.AllKnownTypes() {
			if !IsKubeVirtGroup(gvk.Group) || gvk.Group == subresourcesGroup || gvk.Version == runtime.APIVersionInternal ||
				foreign[typ.PkgPath()] {
				continue
			}
			if packages[gvk.Group] == nil {
				packages[gvk.Group] = map[string][]string{}
			}
			packages[gvk.Group][typ.PkgPath()] = append(packages[gvk.Group][typ.PkgPath()], gvk.Version)
		}
		for group, byPackage := range packages {
			order := scheme.PrioritizedVersionsForGroup(group)
			if len(order) > 0 {
				g.preferred[group] = order[0].Version
			}
			for pkg, versions := range byPackage {
				g.packageVersion[pkg] = mostPreferred(versions, order)
			}
		}
	}
	return g
}

// mostPreferred is the version of versions that comes first in order (the alphabetically first
// if order has none of them).
func mostPreferred(versions []string, order []schema.GroupVersion) string {
	for _, gv := range order {
		for _, v := range versions {
			if v == gv.Version {
				return v
			}
		}
	}
	sort.Strings(versions)
	return versions[0]
}
