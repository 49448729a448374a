package openapi

import (
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
)

// Operations names the operations as KubeVirt's OpenAPI does, for the configurations'
// GetOperationIDAndTags; generated clients name their methods after these IDs.
type Operations struct {
	groups kubeVirtGroups
}

// NewOperations returns the operation namer of the KubeVirt groups of schemes.
func NewOperations(schemes ...*runtime.Scheme) *Operations {
	return &Operations{groups: newKubeVirtGroups(schemes...)}
}

// OperationIDAndTags gives the operations of a KubeVirt group's preferred version KubeVirt's IDs:
// without the group and version Kubernetes puts in (createNamespacedVirtualMachine, not
// createKubevirtIoV1NamespacedVirtualMachine), the group's and version's discovery as
// getAPIGroup-<group> and getAPIResources-<group>-<version>; subresources.kubevirt.io's as its
// routes name them (v1Start). Other versions (kubevirt.io/v1alpha3) and groups keep Kubernetes'
// IDs, so that every ID stays unique in the OpenAPI v2 document, which holds all groups and
// versions.
func (o *Operations) OperationIDAndTags(r *restful.Route) (string, []string, error) {
	group, version, rest := splitGroupPath(r.Path)
	if group == subresourcesGroup {
		// KubeVirt's IDs there start with the version, not a verb, which Kubernetes' naming
		// insists on.
		tag := "subresourcesKubevirtIo"
		if version != "" {
			tag += "_" + version
		}
		return r.Operation, []string{tag}, nil
	}
	id, tags, err := openapinamer.GetOperationIDAndTags(r)
	if err != nil || !IsKubeVirtGroup(group) {
		return id, tags, err
	}
	switch {
	case version == "":
		return r.Operation + "-" + group, tags, nil
	case version != o.groups.preferred[group]:
		return id, tags, nil
	case rest == "":
		return r.Operation + "-" + group + "-" + version, tags, nil
	case strings.HasPrefix(rest, "watch/namespaces/") && strings.HasSuffix(rest, "/{name}"):
		// The watch of one object, which KubeVirt's OpenAPI has not, keeps the qualified ID:
		// KubeVirt gives the unqualified one to the watch of a namespace's objects.
		return id, tags, nil
	}
	// Kubernetes' own ID, as for a path outside any group.
	unqualified := *r
	unqualified.Path = "/"
	if id, _, err = openapinamer.GetOperationIDAndTags(&unqualified); err != nil {
		return id, tags, err
	}
	if strings.HasPrefix(id, "watchNamespaced") {
		id = strings.TrimSuffix(id, "List")
	}
	return id, tags, nil
}

// splitGroupPath splits "/apis/<group>/<version>/<rest>"; group is "" for a path outside
// /apis/<group>/.
func splitGroupPath(path string) (group, version, rest string) {
	parts := strings.SplitN(strings.TrimPrefix(path, "/apis/"), "/", 3)
	if !strings.HasPrefix(path, "/apis/") || len(parts) < 2 {
		return "", "", ""
	}
	group, version = parts[0], parts[1]
	if len(parts) == 3 {
		rest = parts[2]
	}
	return group, version, rest
}
