package clone

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/snapshot"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	clonefake "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned/fake"
	cloneinformers "github.com/hangarvm/hangar/pkg/generated/clone/informers/externalversions"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	vmsfake "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned/fake"
	vmsinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions"
)

const ns = "default"

var now = metav1.NewTime(time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC))

type fixture struct {
	c      *Controller
	clones *clonefake.Clientset
	vms    *vmsfake.Clientset
	events *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	var cloneObjs, vmsObjs, kvObjs, kubeObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *clonev1beta1.VirtualMachineClone:
			cloneObjs = append(cloneObjs, o)
		case *snapshotv1beta1.VirtualMachineSnapshot, *snapshotv1beta1.VirtualMachineSnapshotContent, *snapshotv1beta1.VirtualMachineRestore:
			vmsObjs = append(vmsObjs, o)
		case *v1.VirtualMachine:
			kvObjs = append(kvObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{clones: clonefake.NewSimpleClientset(cloneObjs...), vms: vmsfake.NewSimpleClientset(vmsObjs...),
		events: record.NewFakeRecorder(100)}
	cf := cloneinformers.NewSharedInformerFactory(f.clones, 0)
	vmsf := vmsinformers.NewSharedInformerFactory(f.vms, 0)
	kvf := kvinformers.NewSharedInformerFactory(kvfake.NewSimpleClientset(kvObjs...), 0)
	kf := informers.NewSharedInformerFactory(kubefake.NewSimpleClientset(kubeObjs...), 0)
	inf := Informers{Clones: cf.Clone().V1beta1().VirtualMachineClones(), VMs: kvf.Kubevirt().V1().VirtualMachines(),
		Snapshots: vmsf.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsf.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
		Restores: vmsf.Snapshot().V1beta1().VirtualMachineRestores(), Claims: kf.Core().V1().PersistentVolumeClaims()}
	c, err := New(Clients{Clones: f.clones, Snapshots: f.vms}, inf, f.events)
	require.NoError(t, err)
	c.now = func() metav1.Time { return now }
	c.suffix = func() string { return "abcde" }
	for _, o := range objs {
		var idx cache.Indexer
		switch o.(type) {
		case *clonev1beta1.VirtualMachineClone:
			idx = inf.Clones.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineSnapshot:
			idx = inf.Snapshots.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineSnapshotContent:
			idx = inf.Contents.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineRestore:
			idx = inf.Restores.Informer().GetIndexer()
		case *v1.VirtualMachine:
			idx = inf.VMs.Informer().GetIndexer()
		case *corev1.PersistentVolumeClaim:
			idx = inf.Claims.Informer().GetIndexer()
		}
		require.NotNil(t, idx, "%T", o)
		require.NoError(t, idx.Add(o))
	}
	f.c = c
	return f
}

func sourceVM() *v1.VirtualMachine {
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, UID: "vm-uid",
			Labels:      map[string]string{"app": "db", "team/owner": "ops", "tier": "gold"},
			Annotations: map[string]string{"note": "keep", "secret/token": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyHalted), Template: &v1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", "debug": "yes"}},
			Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
				Devices:  v1.Devices{Interfaces: []v1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01"}, {Name: "second", MacAddress: "02:00:00:00:00:02"}}},
				Firmware: &v1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223", Serial: "old-serial"}}}}},
	}
}

func vmClone(source corev1.TypedLocalObjectReference, status clonev1beta1.VirtualMachineCloneStatus) *clonev1beta1.VirtualMachineClone {
	return &clonev1beta1.VirtualMachineClone{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns, UID: "clone-uid"},
		Spec: clonev1beta1.VirtualMachineCloneSpec{Source: &source,
			Target: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-copy"}},
		Status: status,
	}
}

var (
	vmSource   = corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}
	snapSource = corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "golden"}
)

const snapName, restoreName = "clone-c-snapshot-db-abcde", "clone-c-restore-db-abcde"

func snap(name string, ready bool, owned bool) *snapshotv1beta1.VirtualMachineSnapshot {
	s := &snapshotv1beta1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "snap-uid"},
		Spec:   snapshotv1beta1.VirtualMachineSnapshotSpec{Source: vmSource},
		Status: &snapshotv1beta1.VirtualMachineSnapshotStatus{Phase: snapshotv1beta1.InProgress, ReadyToUse: ptr.To(ready)}}
	if ready {
		s.Status.Phase = snapshotv1beta1.Succeeded
		s.Status.VirtualMachineSnapshotContentName = ptr.To("vmsnapshot-content-snap-uid")
	}
	if owned {
		s.OwnerReferences = []metav1.OwnerReference{ownerRef(vmClone(vmSource, clonev1beta1.VirtualMachineCloneStatus{}))}
	}
	return s
}

func content() *snapshotv1beta1.VirtualMachineSnapshotContent {
	vm := sourceVM()
	return &snapshotv1beta1.VirtualMachineSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "vmsnapshot-content-snap-uid", Namespace: ns},
		Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{Source: snapshotv1beta1.SourceSpec{VirtualMachine: &snapshotv1beta1.VirtualMachine{
			ObjectMeta: vm.ObjectMeta, Spec: vm.Spec}}}}
}

func restore(complete bool, reason, message string) *snapshotv1beta1.VirtualMachineRestore {
	r := &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: restoreName, Namespace: ns, UID: "restore-uid",
		OwnerReferences: []metav1.OwnerReference{ownerRef(vmClone(vmSource, clonev1beta1.VirtualMachineCloneStatus{}))}},
		Spec: snapshotv1beta1.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: snapName,
			Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-copy"}},
		Status: &snapshotv1beta1.VirtualMachineRestoreStatus{Complete: ptr.To(complete),
			Restores: []snapshotv1beta1.VolumeRestore{{VolumeName: "root", PersistentVolumeClaimName: "restore-restore-uid-root"}}}}
	if reason != "" {
		r.Status.Conditions = []snapshotv1beta1.Condition{{Type: snapshotv1beta1.ConditionProgressing, Status: corev1.ConditionFalse, Reason: reason, Message: message}}
	}
	return r
}

func targetVM() *v1.VirtualMachine {
	vm := sourceVM()
	vm.Name, vm.UID = "db-copy", "copy-uid"
	vm.Annotations = map[string]string{snapshot.LastRestoreAnnotation: restoreName + "-restore-uid"}
	return vm
}

func boundClaim(phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restore-restore-uid-root", Namespace: ns,
		Annotations: map[string]string{"restore.kubevirt.io/name": restoreName}}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func status(phase clonev1beta1.VirtualMachineClonePhase, snapshot, restore string) clonev1beta1.VirtualMachineCloneStatus {
	st := clonev1beta1.VirtualMachineCloneStatus{Phase: phase}
	if snapshot != "" {
		st.SnapshotName = ptr.To(snapshot)
	}
	if restore != "" {
		st.RestoreName = ptr.To(restore)
	}
	return st
}

func cond(st clonev1beta1.VirtualMachineCloneStatus, t snapshotv1beta1.ConditionType) string {
	if c := snapshotv1beta1.FindCondition(st.Conditions, t); c != nil {
		return string(c.Status) + " " + c.Reason
	}
	return ""
}

// TestSync: each phase of a clone, from what exists to what the sync does.
func TestSync(t *testing.T) {
	tests := []struct {
		name    string
		clone   *clonev1beta1.VirtualMachineClone
		objs    []runtime.Object
		phase   clonev1beta1.VirtualMachineClonePhase
		snap    string // the status' snapshotName, restoreName and targetName after the sync
		restore string
		target  string
		ready   string // "Status Reason" of the Ready and Progressing conditions
		prog    string
		// created is the snapshot or restore the sync creates; deleted what it deletes.
		created, deleted []string
		event            string
		gone             bool // the clone deleted
	}{
		{name: "a VM source that does not exist: pending, says so", clone: vmClone(vmSource, status("", "", "")),
			phase: "", ready: "False source doesn't exist: VirtualMachine default/db", prog: "False Pending", event: SourceDoesNotExist},
		{name: "a snapshot source that does not exist: pending", clone: vmClone(snapSource, status("", "", "")),
			phase: "", ready: "False source doesn't exist: VirtualMachineSnapshot default/golden", prog: "False Pending", event: SourceDoesNotExist},
		{name: "the target name taken: Failed", clone: vmClone(vmSource, status("", "", "")), objs: []runtime.Object{sourceVM(), func() *v1.VirtualMachine {
			vm := sourceVM()
			vm.Name = "db-copy"
			return vm
		}()}, phase: clonev1beta1.Failed, ready: "False VirtualMachine db-copy already exists: a clone makes a new VirtualMachine",
			prog: "False Failed", event: TargetVMExists},
		{name: "a VM: snapshot taken", clone: vmClone(vmSource, status("", "", "")), objs: []runtime.Object{sourceVM()},
			phase: clonev1beta1.SnapshotInProgress, snap: snapName, ready: "False Still processing", prog: "True Still processing",
			created: []string{"snapshot " + snapName}, event: SnapshotCreated},
		{name: "the snapshot not ready: waits", clone: vmClone(vmSource, status(clonev1beta1.SnapshotInProgress, snapName, "")),
			objs: []runtime.Object{sourceVM(), snap(snapName, false, true)}, phase: clonev1beta1.SnapshotInProgress, snap: snapName,
			ready: "False Still processing", prog: "True Still processing"},
		{name: "the snapshot ready: restore created", clone: vmClone(vmSource, status(clonev1beta1.SnapshotInProgress, snapName, "")),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content()},
			phase: clonev1beta1.RestoreInProgress, snap: snapName, restore: restoreName, ready: "False Still processing", prog: "True Still processing",
			created: []string{"restore " + restoreName}, event: SnapshotReady},
		{name: "the snapshot failed: Failed", clone: vmClone(vmSource, status(clonev1beta1.SnapshotInProgress, snapName, "")),
			objs: []runtime.Object{sourceVM(), func() *snapshotv1beta1.VirtualMachineSnapshot {
				s := snap(snapName, false, true)
				s.Status.Phase = snapshotv1beta1.Failed
				s.Status.Error = &snapshotv1beta1.Error{Message: ptr.To("no VolumeSnapshotClass")}
				return s
			}()}, phase: clonev1beta1.Failed, snap: snapName, ready: "False snapshot " + snapName + " failed: no VolumeSnapshotClass",
			prog: "False Failed", event: SnapshotFailed},
		{name: "the snapshot deleted: Failed", clone: vmClone(vmSource, status(clonev1beta1.RestoreInProgress, snapName, "")),
			objs:  []runtime.Object{sourceVM()},
			phase: clonev1beta1.Failed, snap: snapName, ready: "False snapshot " + snapName + " does not exist anymore", prog: "False Failed", event: SnapshotDeleted},
		{name: "a snapshot source: restored directly", clone: vmClone(snapSource, status("", "", "")),
			objs:  []runtime.Object{snap("golden", true, false), content()},
			phase: clonev1beta1.RestoreInProgress, restore: "clone-c-restore-db-abcde", ready: "False Still processing", prog: "True Still processing",
			created: []string{"restore " + restoreName}, event: SnapshotReady},
		{name: "the target made by the clone's own restore, its name not yet written: no taken name, the restore adopted",
			clone: vmClone(vmSource, status(clonev1beta1.RestoreInProgress, snapName, "")),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(true, "", ""), targetVM()},
			phase: clonev1beta1.RestoreInProgress, snap: snapName, restore: restoreName, ready: "False Still processing", prog: "True Still processing"},
		{name: "the restore in progress: waits", clone: vmClone(vmSource, status(clonev1beta1.RestoreInProgress, snapName, restoreName)),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(false, "", "")},
			phase: clonev1beta1.RestoreInProgress, snap: snapName, restore: restoreName, ready: "False Still processing", prog: "True Still processing"},
		{name: "the restore found the target taken: Failed", clone: vmClone(vmSource, status(clonev1beta1.RestoreInProgress, snapName, restoreName)),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(false, "TargetExists", "VirtualMachine db-copy already exists")},
			phase: clonev1beta1.Failed, snap: snapName, restore: restoreName, ready: "False VirtualMachine db-copy already exists", prog: "False Failed",
			event: TargetVMExists},
		{name: "the restore complete, the target not in the cache yet", clone: vmClone(vmSource, status(clonev1beta1.RestoreInProgress, snapName, restoreName)),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(true, "", "")},
			phase: clonev1beta1.CreatingTargetVM, snap: snapName, restore: restoreName, target: "db-copy", ready: "False Still processing",
			prog: "True Still processing", event: RestoreReady},
		{name: "the target made, its claim not bound: Succeeded, snapshot and restore kept", clone: vmClone(vmSource, status(clonev1beta1.CreatingTargetVM, snapName, restoreName)),
			objs:  []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(true, "", ""), targetVM(), boundClaim(corev1.ClaimPending)},
			phase: clonev1beta1.Succeeded, snap: snapName, restore: restoreName, ready: "True Ready", prog: "False Ready", event: TargetVMCreated},
		{name: "the claims bound: snapshot and restore deleted", clone: vmClone(vmSource, func() clonev1beta1.VirtualMachineCloneStatus {
			st := status(clonev1beta1.Succeeded, snapName, restoreName)
			st.TargetName = ptr.To("db-copy")
			return st
		}()), objs: []runtime.Object{sourceVM(), snap(snapName, true, true), content(), restore(true, "", ""), targetVM(), boundClaim(corev1.ClaimBound)},
			phase: clonev1beta1.Succeeded, target: "db-copy", deleted: []string{"restore " + restoreName, "snapshot " + snapName}, event: PVCBound},
		{name: "a Succeeded clone whose target was deleted goes too", clone: vmClone(vmSource, status(clonev1beta1.Succeeded, "", "")),
			objs: []runtime.Object{sourceVM()}, gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append(tt.objs, tt.clone)...)
			ctx := context.Background()
			require.NoError(t, f.c.sync(ctx, ns+"/c"))
			var created, deleted []string
			for _, a := range f.vms.Actions() {
				switch a.GetVerb() {
				case "create":
					created = append(created, strings.TrimSuffix(a.GetResource().Resource, "s")[len("virtualmachine"):]+" "+
						a.(interface{ GetObject() runtime.Object }).GetObject().(metav1.Object).GetName())
				case "delete":
					deleted = append(deleted, strings.TrimSuffix(a.GetResource().Resource, "s")[len("virtualmachine"):]+" "+
						a.(interface{ GetName() string }).GetName())
				}
			}
			assert.Equal(t, tt.created, created)
			assert.Equal(t, tt.deleted, deleted)
			got, err := f.clones.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "c", metav1.GetOptions{})
			if tt.gone {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			st := got.Status
			assert.Equal(t, tt.phase, st.Phase)
			assert.Equal(t, tt.snap, ptr.Deref(st.SnapshotName, ""), "snapshotName")
			assert.Equal(t, tt.restore, ptr.Deref(st.RestoreName, ""), "restoreName")
			assert.Equal(t, tt.target, ptr.Deref(st.TargetName, ""), "targetName")
			if tt.ready != "" {
				assert.Equal(t, tt.ready, cond(st, snapshotv1beta1.ConditionReady))
				assert.Equal(t, tt.prog, cond(st, snapshotv1beta1.ConditionProgressing))
			}
			if tt.phase == clonev1beta1.Succeeded && tt.ready != "" {
				assert.Equal(t, &now, st.CreationTime)
			}
			if tt.event != "" {
				assert.Contains(t, drain(f.events), tt.event)
			}
		})
	}
}

func drain(events *record.FakeRecorder) string {
	var all []string
	for {
		select {
		case e := <-events.Events:
			all = append(all, e)
		default:
			return strings.Join(all, "\n")
		}
	}
}

// TestSnapshotAndRestoreOwned: the snapshot and the restore belong to the clone, and the
// restore names the snapshot and the target and carries the patches.
func TestSnapshotAndRestoreOwned(t *testing.T) {
	f := newFixture(t, sourceVM(), vmClone(vmSource, status("", "", "")))
	ctx := context.Background()
	require.NoError(t, f.c.sync(ctx, ns+"/c"))
	s, err := f.vms.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, snapName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, vmSource, s.Spec.Source)
	require.Len(t, s.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "clone.kubevirt.io/v1beta1", Kind: "VirtualMachineClone", Name: "c", UID: "clone-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, s.OwnerReferences[0])

	f = newFixture(t, sourceVM(), snap(snapName, true, true), content(), vmClone(vmSource, status(clonev1beta1.SnapshotInProgress, snapName, "")))
	require.NoError(t, f.c.sync(ctx, ns+"/c"))
	r, err := f.vms.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, restoreName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, snapName, r.Spec.VirtualMachineSnapshotName)
	assert.Equal(t, "db-copy", r.Spec.Target.Name)
	assert.True(t, metav1.IsControlledBy(r, vmClone(vmSource, clonev1beta1.VirtualMachineCloneStatus{})))
	assert.NotEmpty(t, r.Spec.Patches)
}

// TestTargetPatches: the patches a clone's restore applies make the target KubeVirt's clone
// makes: new MACs, serial and UUID, labels and annotations filtered, the clone's patches last.
func TestTargetPatches(t *testing.T) {
	tests := []struct {
		name                    string
		spec                    clonev1beta1.VirtualMachineCloneSpec
		noFirmware              bool
		macs                    []string
		serial, uuid            string
		labels, annotations     map[string]string
		templateLabels          map[string]string
		firmwareAbsentAfterward bool
	}{
		{name: "no filters, no new MACs: MACs and serial emptied, everything kept",
			macs: []string{"", ""}, serial: "", labels: map[string]string{"app": "db", "team/owner": "ops", "tier": "gold"},
			annotations:    map[string]string{"note": "keep", "secret/token": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			templateLabels: map[string]string{"app": "db", "debug": "yes"}},
		{name: "new MACs and serial, filters with wildcards and negations",
			spec: clonev1beta1.VirtualMachineCloneSpec{NewMacAddresses: map[string]string{"default": "02:00:00:00:aa:01"},
				NewSMBiosSerial: ptr.To("new-serial"), LabelFilters: []string{"*", "!team/*"}, AnnotationFilters: []string{"note"},
				Template: clonev1beta1.CloneTemplateFilters{LabelFilters: []string{"app"}}},
			macs: []string{"02:00:00:00:aa:01", ""}, serial: "new-serial", labels: map[string]string{"app": "db", "tier": "gold"},
			annotations:    map[string]string{"note": "keep", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			templateLabels: map[string]string{"app": "db"}},
		{name: "the clone's own patches, an array and one operation, applied last",
			spec: clonev1beta1.VirtualMachineCloneSpec{Patches: []string{
				`[{"op":"add","path":"/metadata/labels/copy","value":"yes"},{"op":"remove","path":"/metadata/labels/tier"}]`,
				`{"op":"replace","path":"/metadata/labels/app","value":"db-copy"}`}},
			macs: []string{"", ""}, labels: map[string]string{"app": "db-copy", "team/owner": "ops", "copy": "yes"},
			annotations:    map[string]string{"note": "keep", "secret/token": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			templateLabels: map[string]string{"app": "db", "debug": "yes"}},
		{name: "no firmware, a new serial: the serial given", noFirmware: true, spec: clonev1beta1.VirtualMachineCloneSpec{NewSMBiosSerial: ptr.To("s-2")},
			macs: []string{"", ""}, serial: "s-2", labels: map[string]string{"app": "db", "team/owner": "ops", "tier": "gold"},
			annotations:    map[string]string{"note": "keep", "secret/token": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			templateLabels: map[string]string{"app": "db", "debug": "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := sourceVM()
			if tt.noFirmware {
				source.Spec.Template.Spec.Domain.Firmware = nil
			}
			kept := &snapshotv1beta1.VirtualMachine{ObjectMeta: source.ObjectMeta, Spec: source.Spec}
			patches, err := targetPatches(kept, &tt.spec)
			require.NoError(t, err)
			// Applied as the restore applies them: one JSON patch of all the operations.
			raw, err := json.Marshal(source)
			require.NoError(t, err)
			patch, err := jsonpatch.DecodePatch([]byte("[" + strings.Join(patches, ",") + "]"))
			require.NoError(t, err)
			raw, err = patch.Apply(raw)
			require.NoError(t, err, strings.Join(patches, "\n"))
			var target v1.VirtualMachine
			require.NoError(t, json.Unmarshal(raw, &target))
			var macs []string
			for _, i := range target.Spec.Template.Spec.Domain.Devices.Interfaces {
				macs = append(macs, i.MacAddress)
			}
			assert.Equal(t, tt.macs, macs)
			require.NotNil(t, target.Spec.Template.Spec.Domain.Firmware)
			assert.Equal(t, tt.serial, target.Spec.Template.Spec.Domain.Firmware.Serial)
			assert.Empty(t, target.Spec.Template.Spec.Domain.Firmware.UUID, "the new VM's UUID is made from its name")
			assert.Equal(t, tt.labels, target.Labels)
			assert.Equal(t, tt.annotations, target.Annotations)
			assert.Equal(t, tt.templateLabels, target.Spec.Template.ObjectMeta.Labels)
		})
	}
}

func TestKeeps(t *testing.T) {
	tests := []struct {
		filters []string
		key     string
		want    bool
	}{
		{nil, "anything", true},
		{[]string{"*"}, "anything", true},
		{[]string{"app"}, "app", true},
		{[]string{"app"}, "myapp", false},
		{[]string{"app"}, "app/x", false},
		{[]string{"team/*"}, "team/owner", true},
		{[]string{"team/*"}, "teams", false},
		{[]string{"*", "!team/*"}, "team/owner", false},
		{[]string{"*", "!team/*"}, "tier", true},
		{[]string{"!app"}, "other", false},
		{[]string{"team/*", "!team/secret"}, "team/secret", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Keeps(tt.filters, tt.key), "%v %s", tt.filters, tt.key)
	}
}
