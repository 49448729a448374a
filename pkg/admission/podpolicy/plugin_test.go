package podpolicy

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// newChain builds an admission chain of the plugin alone, as virt-api's options do.
func newChain(t *testing.T, c *Checker) admission.ValidationInterface {
	t.Helper()
	plugins := admission.NewPlugins()
	Register(plugins)
	chain, err := plugins.NewFromPlugins([]string{PluginName}, noConfig{}, admission.PluginInitializers{NewInitializer(c)}, nil)
	require.NoError(t, err)
	require.True(t, c.InUse())
	return chain.(admission.ValidationInterface)
}

// noConfig: the plugin has no configuration file.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

func internalSpec() kubevirt.VirtualMachineInstanceSpec {
	return kubevirt.VirtualMachineInstanceSpec{Domain: kubevirt.DomainSpec{Resources: kubevirt.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}}}}
}

func internalVM(strategy kubevirt.VirtualMachineRunStrategy) *kubevirt.VirtualMachine {
	return &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec: kubevirt.VirtualMachineSpec{RunStrategy: ptr.To(strategy),
			Template: &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: internalSpec()}}}
}

func attributes(obj, old runtime.Object, resource string, op admission.Operation, subresource string) admission.Attributes {
	name := ""
	if m, err := metaName(obj); err == nil {
		name = m
	}
	return admission.NewAttributesRecord(obj, old, kubevirt.SchemeGroupVersion.WithKind("X"), "ns", name,
		kubevirt.SchemeGroupVersion.WithResource(resource), subresource, op, nil, false, &user.DefaultInfo{Name: "alice"})
}

func metaName(obj runtime.Object) (string, error) {
	switch o := obj.(type) {
	case *kubevirt.VirtualMachine:
		return o.Name, nil
	case *kubevirt.VirtualMachineInstance:
		return o.Name, nil
	}
	return "", nil
}

func TestPlugin(t *testing.T) {
	// No pod may be created in the namespace: every check that runs refuses.
	c := checkerWith(t, nil, quota("none", corev1.ResourceList{corev1.ResourcePods: q("0")}, nil))
	plugin := newChain(t, c)
	const refusal = "launcher pod: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0"

	created := func(vm *kubevirt.VirtualMachine) *kubevirt.VirtualMachine { vm.Status.Created = true; return vm }
	withRunning := func(running bool) *kubevirt.VirtualMachine {
		vm := internalVM("")
		vm.Spec.RunStrategy, vm.Spec.Running = nil, ptr.To(running)
		return vm
	}
	vmi := &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi"}, Spec: internalSpec()}
	generated := vmi.DeepCopy()
	generated.GenerateName, generated.Name = "web", "webx7k2p"

	tests := []struct {
		name    string
		attrs   admission.Attributes
		wantErr string // "" allowed
	}{
		{"instance create", attributes(vmi, nil, "virtualmachineinstances", admission.Create, ""),
			`virtualmachineinstances.kubevirt.io "vmi" is forbidden: ` + refusal},
		{"a generated name is left out, so a replica set's failures read the same each time",
			attributes(generated, nil, "virtualmachineinstances", admission.Create, ""),
			`virtualmachineinstances.kubevirt.io is forbidden: ` + refusal},
		{"instance metadata update", attributes(vmi, vmi, "virtualmachineinstances", admission.Update, ""), ""},
		{"instance status", attributes(vmi, vmi, "virtualmachineinstances", admission.Update, "status"), ""},
		{"VM create, Always", attributes(internalVM(kubevirt.RunStrategyAlways), nil, "virtualmachines", admission.Create, ""),
			`virtualmachines.kubevirt.io "vm" is forbidden: ` + refusal},
		{"VM create, RerunOnFailure", attributes(internalVM(kubevirt.RunStrategyRerunOnFailure), nil, "virtualmachines", admission.Create, ""), refusal},
		{"VM create, Once", attributes(internalVM(kubevirt.RunStrategyOnce), nil, "virtualmachines", admission.Create, ""), refusal},
		{"VM create, running: true", attributes(withRunning(true), nil, "virtualmachines", admission.Create, ""), refusal},
		{"VM create, Halted: no pod", attributes(internalVM(kubevirt.RunStrategyHalted), nil, "virtualmachines", admission.Create, ""), ""},
		{"VM create, Manual: no pod", attributes(internalVM(kubevirt.RunStrategyManual), nil, "virtualmachines", admission.Create, ""), ""},
		{"VM create, running: false", attributes(withRunning(false), nil, "virtualmachines", admission.Create, ""), ""},
		{"VM update Halted -> Always", attributes(internalVM(kubevirt.RunStrategyAlways), internalVM(kubevirt.RunStrategyHalted), "virtualmachines", admission.Update, ""), refusal},
		{"VM update running false -> true", attributes(withRunning(true), withRunning(false), "virtualmachines", admission.Update, ""), refusal},
		{"VM update Manual -> Always", attributes(internalVM(kubevirt.RunStrategyAlways), internalVM(kubevirt.RunStrategyManual), "virtualmachines", admission.Update, ""), refusal},
		{"VM update of a running VM", attributes(internalVM(kubevirt.RunStrategyAlways), internalVM(kubevirt.RunStrategyAlways), "virtualmachines", admission.Update, ""), ""},
		{"VM update Always -> Halted", attributes(internalVM(kubevirt.RunStrategyHalted), internalVM(kubevirt.RunStrategyAlways), "virtualmachines", admission.Update, ""), ""},
		// Its instance (still stopping) may count in the quota already; its next create is checked.
		{"VM update Halted -> Always with an instance", attributes(internalVM(kubevirt.RunStrategyAlways), created(internalVM(kubevirt.RunStrategyHalted)), "virtualmachines", admission.Update, ""), ""},
		{"VM status", attributes(internalVM(kubevirt.RunStrategyAlways), internalVM(kubevirt.RunStrategyHalted), "virtualmachines", admission.Update, "status"), ""},
		{"another resource", attributes(vmi, nil, "virtualmachineinstancereplicasets", admission.Create, ""), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := plugin.Validate(context.Background(), tc.attrs, nil)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "%v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestPluginNeedsChecker(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	_, err := plugins.NewFromPlugins([]string{PluginName}, noConfig{}, admission.PluginInitializers{}, nil)
	assert.ErrorContains(t, err, "no launcher pod checker")
}
