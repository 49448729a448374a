package openapi

import (
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
)

const (
	kubevirtV1Prefix   = "/apis/kubevirt.io/v1/"
	subresourcesPrefix = "/apis/subresources.kubevirt.io/"
)

// OperationIDAndTags gives the operations KubeVirt's IDs, from which generated clients name
// their methods: kubevirt.io/v1's without the group and version Kubernetes puts in
// (createNamespacedVirtualMachine, not createKubevirtIoV1NamespacedVirtualMachine), and
// subresources.kubevirt.io's as its routes name them (v1Start). kubevirt.io/v1alpha3 and the
// rest keep Kubernetes' IDs, so that every ID stays unique in the OpenAPI v2 document, which
// holds all groups and versions.
func OperationIDAndTags(r *restful.Route) (string, []string, error) {
	if strings.HasPrefix(r.Path, subresourcesPrefix) {
		// KubeVirt's IDs there start with the version, not a verb, which Kubernetes' naming
		// insists on.
		return r.Operation, []string{"subresourcesKubevirtIo_v1"}, nil
	}
	id, tags, err := openapinamer.GetOperationIDAndTags(r)
	if err != nil {
		return id, tags, err
	}
	switch {
	case r.Path == kubevirtV1Prefix:
		return r.Operation + "-kubevirt.io-v1", tags, nil
	case r.Path == "/apis/kubevirt.io/":
		return r.Operation + "-kubevirt.io", tags, nil
	case strings.HasPrefix(r.Path, kubevirtV1Prefix+"watch/namespaces/") && strings.HasSuffix(r.Path, "/{name}"):
		// The watch of one object, which KubeVirt's OpenAPI has not, keeps the qualified ID:
		// KubeVirt gives the unqualified one to the watch of a namespace's objects.
		return id, tags, nil
	case strings.HasPrefix(r.Path, kubevirtV1Prefix):
		// Kubernetes' own ID, as for a path outside any group.
		unqualified := *r
		unqualified.Path = "/"
		if id, _, err = openapinamer.GetOperationIDAndTags(&unqualified); err != nil {
			return id, tags, err
		}
		if strings.HasPrefix(id, "watchNamespaced") {
			id = strings.TrimSuffix(id, "List")
		}
	}
	return id, tags, nil
}
