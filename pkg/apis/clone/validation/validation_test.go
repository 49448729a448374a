package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/clone"
)

func ref(group, kind, name string) *corev1.TypedLocalObjectReference {
	r := &corev1.TypedLocalObjectReference{Kind: kind, Name: name}
	if group != "" {
		r.APIGroup = ptr.To(group)
	}
	return r
}

func TestValidateVirtualMachineClone(t *testing.T) {
	vm := ref("kubevirt.io", "VirtualMachine", "db")
	tests := []struct {
		name string
		spec clone.VirtualMachineCloneSpec
		want []string // the paths of the errors
	}{
		{"a VM", clone.VirtualMachineCloneSpec{Source: vm}, nil},
		{"a snapshot to a named VM, with everything", clone.VirtualMachineCloneSpec{
			Source:            ref("snapshot.kubevirt.io", "VirtualMachineSnapshot", "db-snap"),
			Target:            ref("kubevirt.io", "VirtualMachine", "db-2"),
			LabelFilters:      []string{"*", "!team"},
			AnnotationFilters: []string{"note/*"},
			Template:          clone.CloneTemplateFilters{LabelFilters: []string{"app"}},
			NewMacAddresses:   map[string]string{"default": "02:00:00:00:00:01"},
			NewSMBiosSerial:   ptr.To("serial-2"),
			Patches: []string{`{"op":"replace","path":"/spec/running","value":false}`,
				`[{"op":"add","path":"/metadata/labels/copy","value":"yes"}]`},
		}, nil},
		{"no source", clone.VirtualMachineCloneSpec{}, []string{"spec.source"}},
		{"another kind", clone.VirtualMachineCloneSpec{Source: ref("apps", "Deployment", "db")}, []string{"spec.source.kind"}},
		{"a VM in the snapshot group", clone.VirtualMachineCloneSpec{Source: ref("snapshot.kubevirt.io", "VirtualMachine", "db")},
			[]string{"spec.source.apiGroup"}},
		{"a snapshot without a group", clone.VirtualMachineCloneSpec{Source: ref("", "VirtualMachineSnapshot", "s")},
			[]string{"spec.source.apiGroup"}},
		{"no source name", clone.VirtualMachineCloneSpec{Source: ref("kubevirt.io", "VirtualMachine", "")}, []string{"spec.source.name"}},
		{"a bad source name", clone.VirtualMachineCloneSpec{Source: ref("kubevirt.io", "VirtualMachine", "DB_1")}, []string{"spec.source.name"}},
		{"a snapshot as target", clone.VirtualMachineCloneSpec{Source: vm,
			Target: ref("snapshot.kubevirt.io", "VirtualMachineSnapshot", "s")}, []string{"spec.target.kind"}},
		{"a bad target name", clone.VirtualMachineCloneSpec{Source: vm, Target: ref("kubevirt.io", "VirtualMachine", "a b")},
			[]string{"spec.target.name"}},
		{"empty filters", clone.VirtualMachineCloneSpec{Source: vm, LabelFilters: []string{"a", ""},
			AnnotationFilters: []string{" "}, Template: clone.CloneTemplateFilters{LabelFilters: []string{""}, AnnotationFilters: []string{""}}},
			[]string{"spec.labelFilters[1]", "spec.annotationFilters[0]", "spec.template.labelFilters[0]", "spec.template.annotationFilters[0]"}},
		{"bad MACs", clone.VirtualMachineCloneSpec{Source: vm, NewMacAddresses: map[string]string{
			"a": "not-a-mac", "b": "01:00:5e:00:00:01", "c": "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01", "d": "02:00:00:00:00:02"}},
			[]string{"spec.newMacAddresses[a]", "spec.newMacAddresses[b]", "spec.newMacAddresses[c]"}},
		{"KubeVirt's refused filters", clone.VirtualMachineCloneSpec{Source: vm, LabelFilters: []string{"!", "a!b", "*a", "a*", "!a*", "*"}},
			[]string{"spec.labelFilters[0]", "spec.labelFilters[1]", "spec.labelFilters[2]"}},
		{"the source VM as target", clone.VirtualMachineCloneSpec{Source: vm, Target: ref("kubevirt.io", "VirtualMachine", "db")},
			[]string{"spec.target.name"}},
		{"an empty MAC: one is made", clone.VirtualMachineCloneSpec{Source: vm, NewMacAddresses: map[string]string{"default": ""}}, nil},
		{"bad patches", clone.VirtualMachineCloneSpec{Source: vm, Patches: []string{
			"not json", `{"op":"frobnicate","path":"/spec"}`, `[{"op":"add","path":"spec"}]`, `[]`}},
			[]string{"spec.patches[0]", "spec.patches[1].op", "spec.patches[2][0].path", "spec.patches[3]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateVirtualMachineClone(&clone.VirtualMachineClone{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Spec: tt.spec})
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got, errs.ToAggregate())
		})
	}
}

func TestSpecIsImmutable(t *testing.T) {
	old := &clone.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", ResourceVersion: "1"},
		Spec: clone.VirtualMachineCloneSpec{Source: ref("kubevirt.io", "VirtualMachine", "db")}}
	tests := []struct {
		name   string
		change func(*clone.VirtualMachineClone)
		want   []string
	}{
		{"a label", func(c *clone.VirtualMachineClone) { c.Labels = map[string]string{"a": "b"} }, nil},
		{"the source", func(c *clone.VirtualMachineClone) { c.Spec.Source.Name = "other" }, []string{"spec"}},
		{"a new target", func(c *clone.VirtualMachineClone) { c.Spec.Target = ref("kubevirt.io", "VirtualMachine", "x") }, []string{"spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := old.DeepCopy()
			tt.change(changed)
			var got []string
			for _, e := range ValidateVirtualMachineCloneUpdate(changed, old) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
