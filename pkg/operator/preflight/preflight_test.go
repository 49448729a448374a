package preflight

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

var defaultClass = &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
	Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}}

func TestInstall(t *testing.T) {
	ours := func(s *apiregistrationv1.APIService) bool { return s.Labels["mine"] == "yes" }
	tests := []struct {
		name       string
		kube       []runtime.Object
		crds       []runtime.Object
		apiService []runtime.Object
		spec       operatorv1alpha1.HangarSpec
		reason     string
	}{
		{name: "a clean cluster", kube: []runtime.Object{defaultClass}},
		{name: "KubeVirt's CRDs", kube: []runtime.Object{defaultClass},
			crds: []runtime.Object{&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachines.kubevirt.io"},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "kubevirt.io"}}},
			reason: ReasonKubeVirtInstalled},
		{name: "someone else's APIService", kube: []runtime.Object{defaultClass},
			apiService: []runtime.Object{&apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.subresources.kubevirt.io"},
				Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "kubevirt", Name: "virt-api"}}}},
			reason: ReasonAPIServiceTaken},
		{name: "our own APIService", kube: []runtime.Object{defaultClass},
			apiService: []runtime.Object{&apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.kubevirt.io", Labels: map[string]string{"mine": "yes"}}}}},
		{name: "no default StorageClass", kube: []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}},
			reason: ReasonNoStorageClass},
		{name: "the named StorageClass", kube: []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}},
			spec: operatorv1alpha1.HangarSpec{Etcd: operatorv1alpha1.EtcdSpec{StorageClassName: ptr.To("slow")}}},
		{name: "a missing named StorageClass", kube: []runtime.Object{defaultClass},
			spec: operatorv1alpha1.HangarSpec{Etcd: operatorv1alpha1.EtcdSpec{StorageClassName: ptr.To("fast")}}, reason: ReasonNoStorageClass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Clients{Kube: kubefake.NewSimpleClientset(tt.kube...), APIExtensions: apiextensionsfake.NewSimpleClientset(tt.crds...),
				Aggregator: aggregatorfake.NewSimpleClientset(tt.apiService...)}
			err := Install(context.Background(), c, tt.spec, ours)
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			var f *Failure
			require.True(t, errors.As(err, &f), "%v", err)
			assert.Equal(t, tt.reason, f.Reason)
		})
	}
}

func TestKVM(t *testing.T) {
	withKVM := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1k")}}}
	without := &corev1.Node{}
	emulation := operatorv1alpha1.HangarSpec{Configuration: operatorv1alpha1.HangarConfiguration{
		DeveloperConfiguration: &operatorv1alpha1.DeveloperConfiguration{UseEmulation: true}}}
	assert.NoError(t, KVM([]*corev1.Node{without, withKVM}, operatorv1alpha1.HangarSpec{}))
	assert.NoError(t, KVM([]*corev1.Node{without}, emulation))
	err := KVM([]*corev1.Node{without}, operatorv1alpha1.HangarSpec{})
	var f *Failure
	require.True(t, errors.As(err, &f))
	assert.Equal(t, ReasonNoKVM, f.Reason)
	assert.Contains(t, f.Message, "useEmulation")
}
