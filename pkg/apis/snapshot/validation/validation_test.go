package validation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

func vmRef(group *string, kind, name string) corev1.TypedLocalObjectReference {
	return corev1.TypedLocalObjectReference{APIGroup: group, Kind: kind, Name: name}
}

func TestValidateVirtualMachineSnapshot(t *testing.T) {
	kubevirt := ptr.To("kubevirt.io")
	tests := []struct {
		name string
		spec snapshot.VirtualMachineSnapshotSpec
		want []string // the paths of the errors
	}{
		{"a VM", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(kubevirt, "VirtualMachine", "db")}, nil},
		{"with a deadline and Retain", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(kubevirt, "VirtualMachine", "db"),
			DeletionPolicy: ptr.To(snapshot.DeletionPolicyRetain), FailureDeadline: &metav1.Duration{Duration: time.Minute}}, nil},
		{"no group", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(nil, "VirtualMachine", "db")}, []string{"spec.source.apiGroup"}},
		{"another kind", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(ptr.To("apps"), "Deployment", "db")},
			[]string{"spec.source.apiGroup", "spec.source.kind"}},
		{"no name", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(kubevirt, "VirtualMachine", "")}, []string{"spec.source.name"}},
		{"an unknown policy", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(kubevirt, "VirtualMachine", "db"),
			DeletionPolicy: ptr.To(snapshot.DeletionPolicy("Keep"))}, []string{"spec.deletionPolicy"}},
		{"a negative deadline", snapshot.VirtualMachineSnapshotSpec{Source: vmRef(kubevirt, "VirtualMachine", "db"),
			FailureDeadline: &metav1.Duration{Duration: -time.Second}}, []string{"spec.failureDeadline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateVirtualMachineSnapshot(&snapshot.VirtualMachineSnapshot{
				ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Spec: tt.spec})
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got, errs.ToAggregate())
		})
	}
}

func TestSpecsAreImmutable(t *testing.T) {
	old := &snapshot.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "1"},
		Spec: snapshot.VirtualMachineSnapshotSpec{Source: vmRef(ptr.To("kubevirt.io"), "VirtualMachine", "db")}}
	changed := old.DeepCopy()
	changed.Spec.Source.Name = "other"
	errs := ValidateVirtualMachineSnapshotUpdate(changed, old)
	if assert.Len(t, errs, 1) {
		assert.Equal(t, "spec", errs[0].Field)
	}
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"keep": "yes"}
	assert.Empty(t, ValidateVirtualMachineSnapshotUpdate(labelled, old), "metadata may change")

	oldRestore := &snapshot.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default", ResourceVersion: "1"},
		Spec: snapshot.VirtualMachineRestoreSpec{Target: vmRef(ptr.To("kubevirt.io"), "VirtualMachine", "db"), VirtualMachineSnapshotName: "s"}}
	changedRestore := oldRestore.DeepCopy()
	changedRestore.Spec.VirtualMachineSnapshotName = "t"
	assert.Len(t, ValidateVirtualMachineRestoreUpdate(changedRestore, oldRestore), 1)
}

func TestValidateVirtualMachineRestore(t *testing.T) {
	kubevirt := ptr.To("kubevirt.io")
	tests := []struct {
		name string
		spec snapshot.VirtualMachineRestoreSpec
		want []string
	}{
		{"to a VM", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s"}, nil},
		{"with patches and overrides", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db-copy"), VirtualMachineSnapshotName: "s",
			Patches:                []string{`{"op": "replace", "path": "/metadata/labels/app", "value": "copy"}`},
			VolumeRestoreOverrides: []snapshot.VolumeRestoreOverride{{VolumeName: "root", RestoreName: "db-copy-root"}}}, nil},
		{"no snapshot", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db")}, []string{"spec.virtualMachineSnapshotName"}},
		{"a target that is not a VM", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachineInstance", "db"), VirtualMachineSnapshotName: "s"},
			[]string{"spec.target.kind"}},
		{"in place", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s",
			VolumeRestorePolicy: ptr.To(snapshot.VolumeRestorePolicyInPlace)}, []string{"spec.volumeRestorePolicy"}},
		{"a patch that is not JSON", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s",
			Patches: []string{`replace it`}}, []string{"spec.patches[0]"}},
		{"a patch of the status", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s",
			Patches: []string{`{"op": "add", "path": "/metadata/labels/a", "value": "b"}`, `{"op": "remove", "path": "/status/ready"}`}}, []string{"spec.patches[1].path"}},
		{"an unknown operation", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s",
			Patches: []string{`{"op": "merge", "path": "/spec"}`}}, []string{"spec.patches[0].op"}},
		{"two overrides of a volume, a bad name", snapshot.VirtualMachineRestoreSpec{Target: vmRef(kubevirt, "VirtualMachine", "db"), VirtualMachineSnapshotName: "s",
			VolumeRestoreOverrides: []snapshot.VolumeRestoreOverride{{VolumeName: "root"}, {VolumeName: "root", RestoreName: "Not_A_Name"}}},
			[]string{"spec.volumeRestoreOverrides[1].volumeName", "spec.volumeRestoreOverrides[1].restoreName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateVirtualMachineRestore(&snapshot.VirtualMachineRestore{
				ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"}, Spec: tt.spec})
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.want, got, errs.ToAggregate())
		})
	}
}
