package quota

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// noConfig: the plugin without a configuration file.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

// The plugin as virt-api's chain builds it (registered, then initialized by the generic
// initializer and ours), against a fake clientset: a create within the quota is charged to
// status.used, the next past it gets kube-apiserver's answer, and other kinds, other
// namespaces and updates are not charged.
func TestPluginChargesCreates(t *testing.T) {
	ctx := context.Background()
	const countVMs = "count/virtualmachines.kubevirt.io"
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "tenant-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{countVMs: resource.MustParse("1")}},
		Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{countVMs: resource.MustParse("1")},
			Used: corev1.ResourceList{countVMs: resource.MustParse("0")}},
	}
	client := fake.NewClientset(q)
	factory := informers.NewSharedInformerFactory(client, 0)
	stop := make(chan struct{})
	defer close(stop)

	plugins := admission.NewPlugins()
	Register(plugins)
	chain, err := plugins.NewFromPlugins([]string{PluginName}, noConfig{},
		admission.PluginInitializers{
			genericinitializer.New(client, nil, factory, nil, nil, stop, nil),
			NewInitializer(NewConfiguration(kubevirt.Resource("virtualmachines"), kubevirt.Resource("virtualmachineinstances"))),
		}, nil)
	require.NoError(t, err)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	validate := chain.(admission.ValidationInterface)

	attrs := func(ns, resource, name string, op admission.Operation) admission.Attributes {
		gvr := kubevirt.SchemeGroupVersion.WithResource(resource)
		return admission.NewAttributesRecord(&kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, nil,
			kubevirt.SchemeGroupVersion.WithKind("VirtualMachine"), ns, name, gvr, "", op, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	}
	require.NoError(t, validate.Validate(ctx, attrs("tenant-a", "virtualmachines", "one", admission.Create), nil))
	var used resource.Quantity
	require.Eventually(t, func() bool {
		got, err := client.CoreV1().ResourceQuotas("tenant-a").Get(ctx, "q", metav1.GetOptions{})
		require.NoError(t, err)
		used = got.Status.Used[countVMs]
		return used.Value() == 1
	}, 10*time.Second, 20*time.Millisecond, "status.used charged: %s", used.String())

	err = validate.Validate(ctx, attrs("tenant-a", "virtualmachines", "two", admission.Create), nil)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: q, requested: count/virtualmachines.kubevirt.io=1, used: count/virtualmachines.kubevirt.io=1, limited: count/virtualmachines.kubevirt.io=1")

	assert.NoError(t, validate.Validate(ctx, attrs("tenant-a", "virtualmachines", "one", admission.Update), nil), "updates are not counted")
	assert.NoError(t, validate.Validate(ctx, attrs("tenant-a", "virtualmachineinstances", "one", admission.Create), nil), "a kind the quota does not name")
	assert.NoError(t, validate.Validate(ctx, attrs("tenant-b", "virtualmachines", "two", admission.Create), nil), "another namespace")
}
