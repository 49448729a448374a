package virtctl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	cloneinstall "github.com/hangarvm/hangar/pkg/apis/clone/install"
	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineclone"
)

// TestCreateClone: KubeVirt's documented command lines of `virtctl create clone` print the
// clone KubeVirt's prints.
func TestCreateClone(t *testing.T) {
	vm := func(name string) *corev1.TypedLocalObjectReference {
		return &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: name}
	}
	snapshot := &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "my-snapshot"}
	tests := []struct {
		name string
		args []string
		want clonev1beta1.VirtualMachineCloneSpec
	}{
		{"a source and a target", []string{"--name", "my-clone", "--source-name", "source-vm", "--target-name", "target-vm"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm("target-vm")}},
		{"no target name: virt-api names it", []string{"--name", "my-clone", "--source-name", "source-vm"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm("")}},
		{"types given", []string{"--name", "my-clone", "--source-name", "source-vm", "--source-type", "vm", "--target-name", "target-vm", "--target-type", "vm"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm("target-vm")}},
		{"a snapshot source", []string{"--name", "my-clone", "--source-name", "my-snapshot", "--source-type", "snapshot", "--target-name", "target-vm"},
			clonev1beta1.VirtualMachineCloneSpec{Source: snapshot, Target: vm("target-vm")}},
		{"KubeVirt's other spelling of a snapshot", []string{"--name", "my-clone", "--source-name", "my-snapshot", "--source-type", "VirtualMachineSnapshot"},
			clonev1beta1.VirtualMachineCloneSpec{Source: snapshot, Target: vm("")}},
		{"label and annotation filters", []string{"--name", "my-clone", "--source-name", "source-vm", "--label-filter", "*", "--label-filter", "!some/key",
			"--annotation-filter", "*", "--annotation-filter", "!some/key"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm(""), LabelFilters: []string{"*", "!some/key"},
				AnnotationFilters: []string{"*", "!some/key"}}},
		{"template filters", []string{"--name", "my-clone", "--source-name", "source-vm", "--template-label-filter", "*", "--template-label-filter", "!some/key",
			"--template-annotation-filter", "*", "--template-annotation-filter", "!some/key"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm(""), Template: clonev1beta1.CloneTemplateFilters{
				LabelFilters: []string{"*", "!some/key"}, AnnotationFilters: []string{"*", "!some/key"}}}},
		{"new MACs, KubeVirt's dashes and colons", []string{"--name", "my-clone", "--source-name", "source-vm",
			"--new-mac-address", "interface1:02-11-22-33-44-55", "--new-mac-address", "interface2:02:11:22:33:44:66"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm(""),
				NewMacAddresses: map[string]string{"interface1": "02-11-22-33-44-55", "interface2": "02:11:22:33:44:66"}}},
		{"a new serial", []string{"--name", "my-clone", "--source-name", "source-vm", "--new-smbios-serial", "new-serial"},
			clonev1beta1.VirtualMachineCloneSpec{Source: vm("source-vm"), Target: vm(""), NewSMBiosSerial: ptr.To("new-serial")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runCreate(t, append([]string{"clone"}, tt.args...)...)
			require.NoError(t, err, stderr)
			got := decodeStrict[clonev1beta1.VirtualMachineClone](t, out)
			assert.Equal(t, metav1.TypeMeta{APIVersion: "clone.kubevirt.io/v1beta1", Kind: "VirtualMachineClone"}, got.TypeMeta)
			assert.Equal(t, "my-clone", got.Name)
			assert.Empty(t, got.Namespace, "no -n, no namespace")
			assert.Equal(t, tt.want, got.Spec)
			assertVirtAPIAccepts(t, out)
		})
	}
}

// assertVirtAPIAccepts decodes a printed clone as virt-api does and checks it as it does at
// creation (the target named, then validated).
func assertVirtAPIAccepts(t *testing.T, manifest string) {
	t.Helper()
	scheme := runtime.NewScheme()
	cloneinstall.Install(scheme)
	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDecoder(clone.SchemeGroupVersion).Decode([]byte(manifest), nil, nil)
	require.NoError(t, err)
	internal := obj.(*clone.VirtualMachineClone)
	internal.Namespace = "default"
	strategy := virtualmachineclone.NewStrategy(scheme)
	strategy.PrepareForCreate(context.Background(), internal)
	assert.Empty(t, strategy.Validate(context.Background(), internal))
}

func TestCreateCloneNameAndNamespace(t *testing.T) {
	out, stderr, err := runCreate(t, "clone", "-n", "vms", "--source-name", "db")
	require.NoError(t, err, stderr)
	got := decodeStrict[clonev1beta1.VirtualMachineClone](t, out)
	assert.Regexp(t, `^clone-[a-z0-9]{5}$`, got.Name, "KubeVirt's random name")
	assert.Equal(t, "vms", got.Namespace)
}

func TestCreateCloneRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"--target-name", "x"}, `required flag(s) "source-name" not set`},
		{"an unknown source type", []string{"--source-name", "db", "--source-type", "pvc"}, `invalid --source-type "pvc": supported types: vm, snapshot`},
		{"a snapshot as target", []string{"--source-name", "db", "--target-type", "snapshot"}, `invalid --target-type "snapshot": supported types: vm`},
		{"a MAC without interface", []string{"--source-name", "db", "--new-mac-address", ":02:00:00:00:00:01"}, "the interface name is empty"},
		{"a MAC without address", []string{"--source-name", "db", "--new-mac-address", "default:"}, "the address is empty"},
		{"no colon", []string{"--source-name", "db", "--new-mac-address", "default"}, "want INTERFACE:MAC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCreate(t, append([]string{"clone"}, tt.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, out, "nothing printed")
		})
	}
}
