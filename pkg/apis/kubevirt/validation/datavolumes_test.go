package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// vmWithDataVolume is validVM whose root disk is the DataVolume template root-dv, imported
// from a DataSource as KubeVirt's docs write it.
func vmWithDataVolume() *kubevirt.VirtualMachine {
	vm := validVM()
	vm.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirt.VolumeSource{DataVolume: &kubevirt.DataVolumeSource{Name: "root-dv"}}
	vm.Spec.DataVolumeTemplates = []kubevirt.DataVolumeTemplateSpec{{
		ObjectMeta: metav1.ObjectMeta{Name: "root-dv"},
		Spec: cdiv1beta1.DataVolumeSpec{
			SourceRef: &cdiv1beta1.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora", Namespace: ptr.To("os-images")},
			Storage: &cdiv1beta1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("30Gi")}}},
		},
	}}
	return vm
}

func TestValidateDataVolumeTemplates(t *testing.T) {
	assert.Empty(t, ValidateVirtualMachine(vmWithDataVolume()))
	dvt := "spec.dataVolumeTemplates[0]"
	tests := []struct {
		name   string
		mutate func(vm *kubevirt.VirtualMachine)
		want   []wantErr
	}{
		{"a dataVolume volume naming no template is left to the registry", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates = nil
		}, nil},
		{"no name", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Name = ""
		}, []wantErr{{field.ErrorTypeRequired, dvt + ".metadata.name"}}},
		{"duplicate names", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, vm.Spec.DataVolumeTemplates[0])
		}, []wantErr{{field.ErrorTypeDuplicate, "spec.dataVolumeTemplates[1].metadata.name"}}},
		{"a template no volume uses", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Name = "other"
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".metadata.name"}}},
		{"name not a DNS subdomain", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Name = "Root_DV"
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = "Root_DV"
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".metadata.name"}, {field.ErrorTypeInvalid, "spec.template.spec.volumes[0].dataVolume.name"}}},
		{"another namespace", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Namespace = "elsewhere"
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".metadata.namespace"}}},
		{"bad label", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Labels = map[string]string{"a": "not valid!"}
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".metadata.labels"}}},
		{"neither pvc nor storage", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.Storage = nil
		}, []wantErr{{field.ErrorTypeRequired, dvt + ".spec.storage"}}},
		{"pvc and storage", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.PVC = &corev1.PersistentVolumeClaimSpec{}
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".spec.pvc"}}},
		{"no source", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.SourceRef = nil
		}, []wantErr{{field.ErrorTypeRequired, dvt + ".spec.source"}}},
		{"no source, the claim populated by its dataSourceRef", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.SourceRef = nil
			vm.Spec.DataVolumeTemplates[0].Spec.Storage.DataSourceRef = &corev1.TypedObjectReference{Kind: "VolumeImportSource", Name: "x"}
		}, nil},
		{"source and sourceRef", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.Source = &cdiv1beta1.DataVolumeSource{Blank: &cdiv1beta1.DataVolumeBlankImage{}}
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".spec.sourceRef"}}},
		{"two sources", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.SourceRef = nil
			vm.Spec.DataVolumeTemplates[0].Spec.Source = &cdiv1beta1.DataVolumeSource{Blank: &cdiv1beta1.DataVolumeBlankImage{},
				HTTP: &cdiv1beta1.DataVolumeSourceHTTP{URL: "https://example.org/disk.img"}}
		}, []wantErr{{field.ErrorTypeInvalid, dvt + ".spec.source"}}},
		{"sourceRef of another kind, no name", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates[0].Spec.SourceRef = &cdiv1beta1.DataVolumeSourceRef{Kind: "PersistentVolumeClaim"}
		}, []wantErr{{field.ErrorTypeNotSupported, dvt + ".spec.sourceRef.kind"}, {field.ErrorTypeRequired, dvt + ".spec.sourceRef.name"}}},
		{"dataVolume volume without a name", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.DataVolumeTemplates = nil
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = ""
		}, []wantErr{{field.ErrorTypeRequired, "spec.template.spec.volumes[0].dataVolume.name"}}},
		{"dataVolume and persistentVolumeClaim in one volume", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim = &kubevirt.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.template.spec.volumes[0]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := vmWithDataVolume()
			tc.mutate(vm)
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachine(vm)))
			old := vmWithDataVolume()
			old.ResourceVersion, vm.ResourceVersion = "1", "1"
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachineUpdate(vm, old)), "on update")
		})
	}
}
