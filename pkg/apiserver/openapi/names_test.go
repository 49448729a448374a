package openapi

import (
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModelName(t *testing.T) {
	for goName, want := range map[string]string{
		"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.VirtualMachine":   "v1.VirtualMachine",
		"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.StartOptions":     "v1.StartOptions",
		"k8s.io/api/core/v1.Affinity":                                      "k8s.io.api.core.v1.Affinity",
		"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta":                  "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"k8s.io/apimachinery/pkg/api/resource.Quantity":                    "k8s.io.apimachinery.pkg.api.resource.Quantity",
		"github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1.HangarSpec": "github.com.hangarvm.hangar.pkg.apis.operator.v1alpha1.HangarSpec",
	} {
		assert.Equal(t, want, ModelName(goName), goName)
	}
}

func TestOperationIDAndTags(t *testing.T) {
	for _, tc := range []struct{ path, operation, want string }{
		{"/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines", "createNamespacedVirtualMachine", "createNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines", "deletecollectionNamespacedVirtualMachine", "deleteCollectionNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/namespaces/{namespace}/virtualmachines", "watchNamespacedVirtualMachineList", "watchNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/namespaces/{namespace}/virtualmachines/{name}", "watchNamespacedVirtualMachine", "watchKubevirtIoV1NamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/virtualmachines", "watchVirtualMachineListForAllNamespaces", "watchVirtualMachineListForAllNamespaces"},
		{"/apis/kubevirt.io/v1/", "getAPIResources", "getAPIResources-kubevirt.io-v1"},
		{"/apis/kubevirt.io/", "getAPIGroup", "getAPIGroup-kubevirt.io"},
		{"/apis/kubevirt.io/v1alpha3/namespaces/{namespace}/virtualmachines", "createNamespacedVirtualMachine", "createKubevirtIoV1alpha3NamespacedVirtualMachine"},
		{"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/start", "v1Start", "v1Start"},
		{"/version/", "getCodeVersion", "getCodeVersion"},
	} {
		id, _, err := OperationIDAndTags(&restful.Route{Path: tc.path, Operation: tc.operation})
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, id, "%s %s", tc.operation, tc.path)
	}
}
