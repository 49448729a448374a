package snapshot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// readySnapshot is a Succeeded snapshot of vm("db") and its content.
func readySnapshot() (*snapshotv1beta1.VirtualMachineSnapshot, *snapshotv1beta1.VirtualMachineSnapshotContent) {
	s := vmSnapshot("before-upgrade", now.Time)
	s.Status = &snapshotv1beta1.VirtualMachineSnapshotStatus{Phase: snapshotv1beta1.Succeeded, ReadyToUse: ptr.To(true),
		VirtualMachineSnapshotContentName: ptr.To(ContentName(s))}
	source := vm("db", v1.RunStrategyAlways)
	c := claim("root-disk", "fast")
	content := &snapshotv1beta1.VirtualMachineSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: ContentName(s), Namespace: ns},
		Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{VirtualMachineSnapshotName: ptr.To(s.Name),
			Source: snapshotv1beta1.SourceSpec{VirtualMachine: &snapshotv1beta1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: source.Labels}, Spec: source.Spec}},
			VolumeBackups: []snapshotv1beta1.VolumeBackup{{VolumeName: "root", VolumeSnapshotName: ptr.To("vmsnapshot-snap-uid-volume-root"),
				PersistentVolumeClaim: snapshotv1beta1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Spec: c.Spec}}}},
	}
	return s, content
}

func vmRestore(name, target string) *snapshotv1beta1.VirtualMachineRestore {
	return &snapshotv1beta1.VirtualMachineRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "restore-uid"},
		Spec: snapshotv1beta1.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "before-upgrade",
			Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target}},
	}
}

func TestRestore(t *testing.T) {
	tests := []struct {
		name string
		// target is the VM of the restore's target name, if any; vmi its instance.
		target     *v1.VirtualMachine
		vmi        bool
		targetName string
		wantWait   string // the reason the restore waits; "" when it completes
	}{
		{name: "same VM, running: waits and says why", target: vm("db", v1.RunStrategyAlways), targetName: "db",
			wantWait: "waiting for VirtualMachine db to stop: its runStrategy is Always; stop it (virtctl stop db) and the restore goes on"},
		{name: "same VM, halted but its instance still there", target: vm("db", v1.RunStrategyHalted), vmi: true, targetName: "db",
			wantWait: "waiting for VirtualMachine db to stop: its instance still exists; stop it (virtctl stop db) and the restore goes on"},
		{name: "same VM, stopped", target: vm("db", v1.RunStrategyHalted), targetName: "db"},
		{name: "a new VM", target: vm("db", v1.RunStrategyAlways), targetName: "db-copy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, content := readySnapshot()
			objs := []runtime.Object{s, content, vmRestore("rollback", tt.targetName), tt.target}
			if tt.vmi {
				objs = append(objs, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}})
			}
			f := newFixture(t, objs...)
			require.NoError(t, f.c.syncRestore(context.Background(), ns+"/rollback"))
			ctx := context.Background()
			r, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "rollback", metav1.GetOptions{})
			require.NoError(t, err)
			require.NotNil(t, r.Status)
			claims, err := f.kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			original, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
			require.NoError(t, err)
			if tt.wantWait != "" {
				assert.False(t, *r.Status.Complete)
				progressing := condition(r.Status.Conditions, snapshotv1beta1.ConditionProgressing)
				require.NotNil(t, progressing)
				assert.Equal(t, tt.wantWait, progressing.Message)
				assert.Empty(t, claims.Items, "no claim before the VM stops")
				assert.Equal(t, tt.target.Spec, original.Spec, "the VM untouched")
				return
			}
			assert.True(t, *r.Status.Complete)
			assert.Equal(t, []snapshotv1beta1.VolumeRestore{{VolumeName: "root", PersistentVolumeClaimName: "restore-restore-uid-root",
				VolumeSnapshotName: "vmsnapshot-snap-uid-volume-root"}}, r.Status.Restores)
			require.Len(t, claims.Items, 1)
			restored := claims.Items[0]
			assert.Equal(t, "restore-restore-uid-root", restored.Name)
			assert.Equal(t, &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot",
				Name: "vmsnapshot-snap-uid-volume-root"}, restored.Spec.DataSource)
			old := claim("root-disk", "fast")
			assert.Equal(t, old.Spec.Resources, restored.Spec.Resources)
			assert.Equal(t, old.Spec.StorageClassName, restored.Spec.StorageClassName)
			assert.Equal(t, old.Spec.AccessModes, restored.Spec.AccessModes)
			assert.Empty(t, restored.Spec.VolumeName, "not bound to the old volume")

			target, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(ctx, tt.targetName, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "restore-restore-uid-root", target.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
			assert.Equal(t, "cloudinit", target.Spec.Template.Spec.Volumes[1].Name)
			assert.Nil(t, target.Status.RestoreInProgress)
			if tt.targetName == "db" {
				assert.Equal(t, v1.RunStrategyHalted, *target.Spec.RunStrategy, "the restored VM stays stopped")
				assert.Equal(t, "02:00:00:00:00:01", target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
				return
			}
			assert.Equal(t, map[string]string{"app": "db"}, target.Labels)
			assert.Empty(t, target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress, "a new VM gets a new MAC")
			assert.NotEqual(t, vm("db", "").Spec.Template.Spec.Domain.Firmware.UUID, target.Spec.Template.Spec.Domain.Firmware.UUID, "and a new firmware UUID")
			assert.Equal(t, tt.target.Spec, original.Spec, "the original VM untouched")
		})
	}
}

// TestRestorePatches: a new VM takes the restore's JSON patches.
func TestRestorePatches(t *testing.T) {
	s, content := readySnapshot()
	r := vmRestore("copy", "db-copy")
	r.Spec.Patches = []string{`{"op": "replace", "path": "/metadata/labels/app", "value": "db-copy"}`}
	f := newFixture(t, s, content, r)
	require.NoError(t, f.c.syncRestore(context.Background(), ns+"/copy"))
	target, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "db-copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "db-copy", target.Labels["app"])
}

// TestRestoreWaitsForSnapshot: a restore of a snapshot not ready yet waits and says so.
func TestRestoreWaitsForSnapshot(t *testing.T) {
	s, content := readySnapshot()
	s.Status.ReadyToUse = ptr.To(false)
	f := newFixture(t, s, content, vmRestore("rollback", "db"), vm("db", v1.RunStrategyHalted))
	require.NoError(t, f.c.syncRestore(context.Background(), ns+"/rollback"))
	r, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(context.Background(), "rollback", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "VirtualMachineSnapshot before-upgrade is not ready to use", condition(r.Status.Conditions, snapshotv1beta1.ConditionReady).Message)
}

// TestRestoreOnlyCreates: a restore made by a clone, or one virt-api marked as creating its
// target (the target did not exist at its creation), creates its target and marks it; it never
// rewrites a VM that exists, and a VM it made already is not restored again.
func TestRestoreOnlyCreates(t *testing.T) {
	const name = "clone-c-restore-db-abcde"
	restores := map[string]func() *snapshotv1beta1.VirtualMachineRestore{
		"a clone's": func() *snapshotv1beta1.VirtualMachineRestore {
			r := vmRestore(name, "db-copy")
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "clone.kubevirt.io/v1beta1", Kind: "VirtualMachineClone",
				Name: "c", UID: "clone-uid", Controller: ptr.To(true)}}
			return r
		},
		"one to a new name": func() *snapshotv1beta1.VirtualMachineRestore {
			r := vmRestore(name, "db-copy")
			r.Annotations = map[string]string{snapshotv1beta1.RestoreCreatesTargetAnnotation: "true"}
			return r
		},
	}
	someoneElses := vm("db-copy", v1.RunStrategyHalted)
	made := vm("db-copy", v1.RunStrategyAlways)
	made.Annotations = map[string]string{LastRestoreAnnotation: name + "-restore-uid"}
	tests := []struct {
		name     string
		target   *v1.VirtualMachine
		wantWait map[string]string
	}{
		{name: "no VM of that name: created and marked"},
		{name: "a VM of that name exists: untouched, the restore says why", target: someoneElses, wantWait: map[string]string{
			"a clone's":         "VirtualMachine db-copy already exists: the restore of a clone only creates a new VirtualMachine",
			"one to a new name": "VirtualMachine db-copy was created after this restore, which may only create a new VirtualMachine: delete one of them",
		}},
		{name: "the VM this restore made: complete, untouched although it runs", target: made},
	}
	for kind, restore := range restores {
		for _, tt := range tests {
			t.Run(kind+": "+tt.name, func(t *testing.T) {
				s, content := readySnapshot()
				objs := []runtime.Object{s, content, restore()}
				if tt.target != nil {
					objs = append(objs, tt.target.DeepCopy())
				}
				f := newFixture(t, objs...)
				ctx := context.Background()
				require.NoError(t, f.c.syncRestore(ctx, ns+"/"+name))
				r, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				target, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(ctx, "db-copy", metav1.GetOptions{})
				require.NoError(t, err)
				if want := tt.wantWait[kind]; want != "" {
					assert.False(t, *r.Status.Complete)
					assert.Equal(t, "TargetExists", condition(r.Status.Conditions, snapshotv1beta1.ConditionProgressing).Reason)
					assert.Equal(t, want, condition(r.Status.Conditions, snapshotv1beta1.ConditionProgressing).Message)
					assert.Equal(t, tt.target, target)
					return
				}
				assert.True(t, *r.Status.Complete)
				assert.Equal(t, name+"-restore-uid", target.Annotations[LastRestoreAnnotation])
				if tt.target != nil {
					assert.Equal(t, tt.target, target)
				}
			})
		}
	}
}

// TestRestoreOnlyRewrites: a restore virt-api marked as rewriting its target (the target
// existed at its creation, and its user was checked for update only) does not make the VM again
// when it was deleted meanwhile; a VM that exists is restored as usual.
func TestRestoreOnlyRewrites(t *testing.T) {
	for _, tt := range []struct {
		name     string
		target   *v1.VirtualMachine
		wantWait string
	}{
		{name: "the VM was deleted: not made again, the restore says why",
			wantWait: "VirtualMachine db was deleted after this restore, which may only rewrite it: create the restore again"},
		{name: "the VM exists, stopped: restored", target: vm("db", v1.RunStrategyHalted)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := vmRestore("rollback", "db")
			r.Annotations = map[string]string{snapshotv1beta1.RestoreCreatesTargetAnnotation: "false"}
			s, content := readySnapshot()
			objs := []runtime.Object{s, content, r}
			if tt.target != nil {
				objs = append(objs, tt.target)
			}
			f := newFixture(t, objs...)
			ctx := context.Background()
			require.NoError(t, f.c.syncRestore(ctx, ns+"/rollback"))
			got, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "rollback", metav1.GetOptions{})
			require.NoError(t, err)
			_, vmErr := f.kv.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
			if tt.wantWait != "" {
				assert.False(t, *got.Status.Complete)
				progressing := condition(got.Status.Conditions, snapshotv1beta1.ConditionProgressing)
				assert.Equal(t, "TargetMissing", progressing.Reason)
				assert.Equal(t, tt.wantWait, progressing.Message)
				assert.True(t, apierrors.IsNotFound(vmErr), "no VM made: %v", vmErr)
				return
			}
			assert.True(t, *got.Status.Complete)
			assert.NoError(t, vmErr)
		})
	}
}

// TestRestoredSpec: each restored volume names its restored claim, as KubeVirt restores: a
// DataVolume from a template through a copy of the template renamed to the claim, any other
// DataVolume as a claim volume.
func TestRestoredSpec(t *testing.T) {
	dataVolume := func(volume, dv string) v1.Volume {
		return v1.Volume{Name: volume, VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: dv, Hotpluggable: true}}}
	}
	claimVolume := func(volume, claim string, hotpluggable bool) v1.Volume {
		return v1.Volume{Name: volume, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: hotpluggable}}}
	}
	template := func(name string) v1.DataVolumeTemplateSpec {
		return v1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"os": "fedora"}}}
	}
	snapshotted := &v1.VirtualMachineSpec{
		DataVolumeTemplates: []v1.DataVolumeTemplateSpec{template("vm-root"), template("vm-unused")},
		Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{Volumes: []v1.Volume{
			dataVolume("root", "vm-root"), dataVolume("shared", "made-elsewhere"), claimVolume("data", "data-claim", false),
			{Name: "cloudinit", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
		}}},
	}
	assert.Equal(t, []string{"root"}, sets.List(templatedVolumes(snapshotted)))
	restores := []snapshotv1beta1.VolumeRestore{
		{VolumeName: "root", PersistentVolumeClaimName: "restore-u-root", DataVolumeName: ptr.To("restore-u-root")},
		{VolumeName: "shared", PersistentVolumeClaimName: "restore-u-shared"},
		{VolumeName: "data", PersistentVolumeClaimName: "restore-u-data"},
	}
	got := restoredSpec(snapshotted, restores)

	wantTemplate := template("restore-u-root")
	assert.Equal(t, []v1.DataVolumeTemplateSpec{wantTemplate, template("vm-unused")}, got.DataVolumeTemplates)
	assert.Equal(t, []v1.Volume{dataVolume("root", "restore-u-root"), claimVolume("shared", "restore-u-shared", true),
		claimVolume("data", "restore-u-data", false), snapshotted.Template.Spec.Volumes[3]}, got.Template.Spec.Volumes)
	assert.Equal(t, "vm-root", snapshotted.DataVolumeTemplates[0].Name, "the snapshotted spec untouched")
}

// TestRestoreDataVolumeTemplate: a snapshotted DataVolume template's volume is restored into a
// claim that CDI adopts for the renamed template, and the status names that DataVolume.
func TestRestoreDataVolumeTemplate(t *testing.T) {
	s, content := readySnapshot()
	source := content.Spec.Source.VirtualMachine
	source.Spec.DataVolumeTemplates = []v1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root-disk"}}}
	source.Spec.Template.Spec.Volumes[0].VolumeSource = v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "root-disk"}}
	f := newFixture(t, s, content, vmRestore("copy", "db-copy"))
	ctx := context.Background()
	require.NoError(t, f.c.syncRestore(ctx, ns+"/copy"))

	r, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []snapshotv1beta1.VolumeRestore{{VolumeName: "root", PersistentVolumeClaimName: "restore-restore-uid-root",
		VolumeSnapshotName: "vmsnapshot-snap-uid-volume-root", DataVolumeName: ptr.To("restore-restore-uid-root")}}, r.Status.Restores)
	claim, err := f.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "restore-restore-uid-root", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "restore-restore-uid-root", claim.Annotations[PopulatedForAnnotation])
	target, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(ctx, "db-copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "restore-restore-uid-root", target.Spec.DataVolumeTemplates[0].Name)
	assert.Equal(t, "restore-restore-uid-root", target.Spec.Template.Spec.Volumes[0].DataVolume.Name)
}
