package openapi

import (
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1alpha3"
)

// testScheme has kubevirt.io/v1 and its alias v1alpha3 (the same Go types), and a second
// KubeVirt group, instancetype.kubevirt.io, whose types stand in another package: a group is
// named from the scheme, with nothing added to this package.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1.AddToScheme(scheme))
	require.NoError(t, v1alpha3.AddToScheme(scheme))
	instancetypes := schema.GroupVersion{Group: "instancetype.kubevirt.io", Version: "v1beta1"}
	scheme.AddKnownTypes(instancetypes, &VirtualMachineInstancetype{})
	require.NoError(t, scheme.SetVersionPriority(v1.SchemeGroupVersion, v1alpha3.SchemeGroupVersion))
	require.NoError(t, scheme.SetVersionPriority(instancetypes))
	return scheme
}

func TestModelName(t *testing.T) {
	namer := NewNamer(testScheme(t))
	for goName, want := range map[string]string{
		"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.VirtualMachine":   "v1.VirtualMachine",
		"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.StartOptions":     "v1.StartOptions",
		"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.DomainSpec":       "v1.DomainSpec",
		"k8s.io/api/core/v1.Affinity":                                      "k8s.io.api.core.v1.Affinity",
		"k8s.io/apimachinery/pkg/api/resource.Quantity":                    "k8s.io.apimachinery.pkg.api.resource.Quantity",
		"github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1.HangarSpec": "github.com.hangarvm.hangar.pkg.apis.operator.v1alpha1.HangarSpec",
		// meta/v1 registers its options in every group version, and is not kubevirt.io's.
		"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		// The stand-in package of instancetype.kubevirt.io/v1beta1 (see testScheme): all its
		// types, kinds or not.
		"github.com/hangarvm/hangar/pkg/apiserver/openapi.VirtualMachineInstancetype":     "v1beta1.VirtualMachineInstancetype",
		"github.com/hangarvm/hangar/pkg/apiserver/openapi.VirtualMachineInstancetypeSpec": "v1beta1.VirtualMachineInstancetypeSpec",
		// Hangar's copy of CDI's DataVolume spec, in no scheme, named as KubeVirt names CDI's.
		"github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1.DataVolumeSpec": "v1beta1.DataVolumeSpec",
	} {
		assert.Equal(t, want, namer.ModelName(goName), goName)
	}
}

// VirtualMachineInstancetype stands in for a kind of instancetype.kubevirt.io, in a package of
// its own (this test's).
type VirtualMachineInstancetype struct {
	metav1.TypeMeta `json:",inline"`
}

func (in *VirtualMachineInstancetype) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

func TestOperationIDAndTags(t *testing.T) {
	operations := NewOperations(testScheme(t))
	for _, tc := range []struct{ path, operation, want string }{
		{"/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines", "createNamespacedVirtualMachine", "createNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines", "deletecollectionNamespacedVirtualMachine", "deleteCollectionNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/namespaces/{namespace}/virtualmachines", "watchNamespacedVirtualMachineList", "watchNamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/namespaces/{namespace}/virtualmachines/{name}", "watchNamespacedVirtualMachine", "watchKubevirtIoV1NamespacedVirtualMachine"},
		{"/apis/kubevirt.io/v1/watch/virtualmachines", "watchVirtualMachineListForAllNamespaces", "watchVirtualMachineListForAllNamespaces"},
		{"/apis/kubevirt.io/v1/", "getAPIResources", "getAPIResources-kubevirt.io-v1"},
		{"/apis/kubevirt.io/", "getAPIGroup", "getAPIGroup-kubevirt.io"},
		{"/apis/kubevirt.io/v1alpha3/namespaces/{namespace}/virtualmachines", "createNamespacedVirtualMachine", "createKubevirtIoV1alpha3NamespacedVirtualMachine"},
		{"/apis/instancetype.kubevirt.io/v1beta1/namespaces/{namespace}/virtualmachineinstancetypes", "createNamespacedVirtualMachineInstancetype", "createNamespacedVirtualMachineInstancetype"},
		{"/apis/instancetype.kubevirt.io/v1beta1/", "getAPIResources", "getAPIResources-instancetype.kubevirt.io-v1beta1"},
		{"/apis/instancetype.kubevirt.io/", "getAPIGroup", "getAPIGroup-instancetype.kubevirt.io"},
		{"/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/start", "v1Start", "v1Start"},
		{"/apis/hangarvm.io/v1alpha1/hangars", "createHangar", "createHangarvmIoV1alpha1Hangar"},
		{"/version/", "getCodeVersion", "getCodeVersion"},
	} {
		id, _, err := operations.OperationIDAndTags(&restful.Route{Path: tc.path, Operation: tc.operation})
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, id, "%s %s", tc.operation, tc.path)
	}
}
