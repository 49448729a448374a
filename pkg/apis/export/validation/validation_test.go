package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/export"
)

func source(group *string, kind, name string) corev1.TypedLocalObjectReference {
	return corev1.TypedLocalObjectReference{APIGroup: group, Kind: kind, Name: name}
}

func TestValidateVirtualMachineExport(t *testing.T) {
	tests := []struct {
		name   string
		export string
		spec   export.VirtualMachineExportSpec
		want   []string // the paths of the errors
	}{
		{"a VM", "e", export.VirtualMachineExportSpec{Source: source(ptr.To("kubevirt.io"), "VirtualMachine", "db")}, nil},
		{"a claim, empty group, token and ttl", "e", export.VirtualMachineExportSpec{
			Source: source(ptr.To(""), "PersistentVolumeClaim", "dump"), TokenSecretRef: ptr.To("tok"),
			TTLDuration: &metav1.Duration{Duration: time.Hour}}, nil},
		{"a claim, no group", "e", export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "dump")}, nil},
		{"a VM without its group", "e", export.VirtualMachineExportSpec{Source: source(nil, "VirtualMachine", "db")},
			[]string{"spec.source.apiGroup"}},
		{"a claim in a group", "e", export.VirtualMachineExportSpec{Source: source(ptr.To("kubevirt.io"), "PersistentVolumeClaim", "d")},
			[]string{"spec.source.apiGroup"}},
		{"a snapshot, not served yet", "e", export.VirtualMachineExportSpec{Source: source(ptr.To("snapshot.kubevirt.io"), "VirtualMachineSnapshot", "s")},
			[]string{"spec.source.kind"}},
		{"an unknown kind, no name", "e", export.VirtualMachineExportSpec{Source: source(nil, "Pod", "")},
			[]string{"spec.source.kind", "spec.source.name"}},
		{"bad names", "e", export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "Bad_Name"), TokenSecretRef: ptr.To("no/slash")},
			[]string{"spec.source.name", "spec.tokenSecretRef"}},
		{"a negative ttl", "e", export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "d"),
			TTLDuration: &metav1.Duration{Duration: -time.Minute}}, []string{"spec.ttlDuration"}},
		{"a dotted name makes no Service name", "a.b", export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "d")},
			[]string{"metadata.name"}},
		{"a name too long for its Service", strings.Repeat("a", MaxNameLength+1), export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "d")},
			[]string{"metadata.name"}},
		{"the longest name", strings.Repeat("a", MaxNameLength), export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "d")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &export.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: tt.export, Namespace: "ns"}, Spec: tt.spec}
			var got []string
			for _, err := range ValidateVirtualMachineExport(e) {
				got = append(got, err.Field)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateVirtualMachineExportUpdate(t *testing.T) {
	old := &export.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "1"},
		Spec: export.VirtualMachineExportSpec{Source: source(nil, "PersistentVolumeClaim", "d")}}
	same := old.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	assert.Empty(t, ValidateVirtualMachineExportUpdate(same, old))
	changed := old.DeepCopy()
	changed.Spec.Source.Name = "other"
	errs := ValidateVirtualMachineExportUpdate(changed, old)
	if assert.Len(t, errs, 1) {
		assert.Equal(t, "spec", errs[0].Field)
	}
}
