package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	vsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	vsfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	vsinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	vmsfake "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned/fake"
	vmsinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions"
)

const ns = "default"

var now = metav1.NewTime(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))

// fixture is a controller over fake clientsets whose informers are seeded with the objects.
type fixture struct {
	c       *Controller
	freezer *fakeFreezer
	kv      *kvfake.Clientset
	vms     *vmsfake.Clientset
	vs      *vsfake.Clientset
	kube    *kubefake.Clientset
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	var kvObjs, vmsObjs, vsObjs, kubeObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *v1.VirtualMachine, *v1.VirtualMachineInstance:
			kvObjs = append(kvObjs, o)
		case *snapshotv1beta1.VirtualMachineSnapshot, *snapshotv1beta1.VirtualMachineSnapshotContent, *snapshotv1beta1.VirtualMachineRestore:
			vmsObjs = append(vmsObjs, o)
		case *vsv1.VolumeSnapshot, *vsv1.VolumeSnapshotClass:
			vsObjs = append(vsObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{kv: kvfake.NewSimpleClientset(kvObjs...), vms: vmsfake.NewSimpleClientset(vmsObjs...),
		vs: vsfake.NewSimpleClientset(vsObjs...), kube: kubefake.NewSimpleClientset(kubeObjs...)}
	kvf := kvinformers.NewSharedInformerFactory(f.kv, 0)
	vmsf := vmsinformers.NewSharedInformerFactory(f.vms, 0)
	vsf := vsinformers.NewSharedInformerFactory(f.vs, 0)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	inf := Informers{
		Snapshots: vmsf.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsf.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
		Restores: vmsf.Snapshot().V1beta1().VirtualMachineRestores(), VMs: kvf.Kubevirt().V1().VirtualMachines(),
		VMIs: kvf.Kubevirt().V1().VirtualMachineInstances(), VolumeSnapshots: vsf.Snapshot().V1().VolumeSnapshots(),
		VolumeSnapshotClasses: vsf.Snapshot().V1().VolumeSnapshotClasses(), Claims: kf.Core().V1().PersistentVolumeClaims(),
		StorageClasses: kf.Storage().V1().StorageClasses(),
	}
	f.freezer = &fakeFreezer{}
	c, err := New(Clients{KubeVirt: f.kv, Snapshots: f.vms, VolumeSnapshots: f.vs, Kube: f.kube, Freezer: f.freezer}, inf, record.NewFakeRecorder(100))
	require.NoError(t, err)
	c.now = func() metav1.Time { return now }
	for _, o := range objs {
		var idx cache.Indexer
		switch o.(type) {
		case *v1.VirtualMachine:
			idx = inf.VMs.Informer().GetIndexer()
		case *v1.VirtualMachineInstance:
			idx = inf.VMIs.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineSnapshot:
			idx = inf.Snapshots.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineSnapshotContent:
			idx = inf.Contents.Informer().GetIndexer()
		case *snapshotv1beta1.VirtualMachineRestore:
			idx = inf.Restores.Informer().GetIndexer()
		case *vsv1.VolumeSnapshot:
			idx = inf.VolumeSnapshots.Informer().GetIndexer()
		case *vsv1.VolumeSnapshotClass:
			idx = inf.VolumeSnapshotClasses.Informer().GetIndexer()
		case *corev1.PersistentVolumeClaim:
			idx = inf.Claims.Informer().GetIndexer()
		case *storagev1.StorageClass:
			idx = inf.StorageClasses.Informer().GetIndexer()
		}
		require.NotNil(t, idx, "%T", o)
		require.NoError(t, idx.Add(o))
	}
	f.c = c
	return f
}

func vm(name string, strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "vm-uid", Labels: map[string]string{"app": "db"}},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy), Template: &v1.VirtualMachineInstanceTemplateSpec{
			Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{Devices: v1.Devices{Interfaces: []v1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01"}}},
					Firmware: &v1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"}},
				Volumes: []v1.Volume{
					{Name: "root", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "root-disk"}}}},
					{Name: "cloudinit", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
				},
			}}},
	}
}

func claim(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName: "pv-1"},
	}
}

func storageClass(name, provisioner string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner}
}

func snapshotClass(name, driver string, isDefault bool) *vsv1.VolumeSnapshotClass {
	c := &vsv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver, DeletionPolicy: vsv1.VolumeSnapshotContentDelete}
	if isDefault {
		c.Annotations = map[string]string{defaultClassAnnotation: "true"}
	}
	return c
}

func vmSnapshot(name string, created time.Time) *snapshotv1beta1.VirtualMachineSnapshot {
	return &snapshotv1beta1.VirtualMachineSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "snap-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}},
	}
}

func getSnapshot(t *testing.T, f *fixture, name string) *snapshotv1beta1.VirtualMachineSnapshot {
	t.Helper()
	s, err := f.vms.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

var condition = snapshotv1beta1.FindCondition

// TestSnapshotStart: the first sync of a snapshot finds the VolumeSnapshotClass of each claim
// (or says why there is none), writes the content and the VolumeSnapshots, and locks the VM.
func TestSnapshotStart(t *testing.T) {
	tests := []struct {
		name      string
		objs      []runtime.Object
		created   time.Time
		wantClass string // "" when no VolumeSnapshot may be made
		wantPhase snapshotv1beta1.VirtualMachineSnapshotPhase
		wantError string
	}{
		{name: "the driver's only class", created: now.Time,
			objs:      []runtime.Object{storageClass("fast", "csi.example.org"), snapshotClass("snap", "csi.example.org", false), snapshotClass("other", "csi.other.org", true)},
			wantClass: "snap", wantPhase: snapshotv1beta1.InProgress},
		{name: "the driver's default class among several", created: now.Time,
			objs: []runtime.Object{storageClass("fast", "csi.example.org"), snapshotClass("a", "csi.example.org", false),
				snapshotClass("b", "csi.example.org", true)},
			wantClass: "b", wantPhase: snapshotv1beta1.InProgress},
		{name: "no class for the driver: said in the status, still in progress", created: now.Time,
			objs:      []runtime.Object{storageClass("fast", "csi.example.org"), snapshotClass("other", "csi.other.org", true)},
			wantPhase: snapshotv1beta1.InProgress,
			wantError: "volume root: PersistentVolumeClaim root-disk of StorageClass fast (provisioner csi.example.org) cannot be snapshotted: no VolumeSnapshotClass has driver csi.example.org"},
		{name: "no class after the failure deadline: failed", created: now.Add(-6 * time.Minute),
			objs:      []runtime.Object{storageClass("fast", "csi.example.org")},
			wantPhase: snapshotv1beta1.Failed,
			wantError: "volume root: PersistentVolumeClaim root-disk of StorageClass fast (provisioner csi.example.org) cannot be snapshotted: no VolumeSnapshotClass has driver csi.example.org"},
		{name: "several classes, none the default", created: now.Time,
			objs:      []runtime.Object{storageClass("fast", "csi.example.org"), snapshotClass("a", "csi.example.org", false), snapshotClass("b", "csi.example.org", false)},
			wantPhase: snapshotv1beta1.InProgress,
			wantError: "volume root: PersistentVolumeClaim root-disk of StorageClass fast: several VolumeSnapshotClasses have driver csi.example.org and none is the default (annotation snapshot.storage.kubernetes.io/is-default-class)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object{vm("db", v1.RunStrategyHalted), claim("root-disk", "fast"), vmSnapshot("before-upgrade", tt.created)}, tt.objs...)
			f := newFixture(t, objs...)
			err := f.c.syncSnapshot(context.Background(), ns+"/before-upgrade")
			if err != nil {
				assert.Contains(t, err.Error(), "requeue after", "only a requeue for the failure deadline")
			}
			s := getSnapshot(t, f, "before-upgrade")
			require.NotNil(t, s.Status)
			assert.Equal(t, tt.wantPhase, s.Status.Phase)
			contents, err := f.vms.SnapshotV1beta1().VirtualMachineSnapshotContents(ns).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			snaps, err := f.vs.SnapshotV1().VolumeSnapshots(ns).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			vmNow, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "db", metav1.GetOptions{})
			require.NoError(t, err)
			if tt.wantError != "" {
				require.NotNil(t, s.Status.Error)
				assert.Equal(t, tt.wantError, *s.Status.Error.Message)
				failure := condition(s.Status.Conditions, snapshotv1beta1.ConditionFailure)
				require.NotNil(t, failure)
				assert.Equal(t, corev1.ConditionTrue, failure.Status)
				assert.Equal(t, tt.wantError, failure.Message)
				assert.Empty(t, contents.Items)
				assert.Empty(t, snaps.Items)
				assert.Nil(t, vmNow.Status.SnapshotInProgress, "the VM is locked only once the snapshot can be taken")
				assert.NotContains(t, vmNow.Finalizers, SourceFinalizer)
				return
			}
			require.Len(t, contents.Items, 1)
			content := contents.Items[0]
			assert.Equal(t, "vmsnapshot-content-snap-uid", content.Name)
			assert.Equal(t, "before-upgrade", metav1.GetControllerOf(&content).Name, "owned by the snapshot (Delete policy)")
			require.NotNil(t, content.Spec.Source.VirtualMachine)
			assert.Equal(t, vm("db", v1.RunStrategyHalted).Spec, content.Spec.Source.VirtualMachine.Spec, "the VM's spec as it was")
			assert.Equal(t, map[string]string{"app": "db"}, content.Spec.Source.VirtualMachine.Labels)
			require.Len(t, content.Spec.VolumeBackups, 1)
			backup := content.Spec.VolumeBackups[0]
			assert.Equal(t, "root", backup.VolumeName)
			assert.Equal(t, "root-disk", backup.PersistentVolumeClaim.Name)
			assert.Nil(t, backup.PersistentVolumeClaim.Annotations, "binding annotations are not kept")
			require.Len(t, snaps.Items, 1)
			vs := snaps.Items[0]
			assert.Equal(t, "vmsnapshot-snap-uid-volume-root", vs.Name)
			assert.Equal(t, "root-disk", *vs.Spec.Source.PersistentVolumeClaimName)
			assert.Equal(t, tt.wantClass, *vs.Spec.VolumeSnapshotClassName)
			assert.Equal(t, content.Name, metav1.GetControllerOf(&vs).Name, "owned by the content")
			assert.Equal(t, ptr.To("before-upgrade"), vmNow.Status.SnapshotInProgress)
			assert.Contains(t, vmNow.Finalizers, SourceFinalizer, "a delete of the VM waits for the snapshot")
			assert.Equal(t, []string{"root"}, s.Status.SnapshotVolumes.IncludedVolumes)
			assert.Equal(t, []string{"cloudinit"}, s.Status.SnapshotVolumes.ExcludedVolumes)
			assert.Nil(t, s.Status.Indications, "a stopped VM: offline")
		})
	}
}

// TestSnapshotRetainPolicy: with Retain, the content has no owner and outlives the snapshot.
func TestSnapshotRetainPolicy(t *testing.T) {
	s := vmSnapshot("keep", now.Time)
	s.Spec.DeletionPolicy = ptr.To(snapshotv1beta1.VirtualMachineSnapshotContentRetain)
	f := newFixture(t, vm("db", v1.RunStrategyHalted), claim("root-disk", "fast"), s,
		storageClass("fast", "csi.example.org"), snapshotClass("snap", "csi.example.org", false))
	require.NoError(t, f.c.syncSnapshot(context.Background(), ns+"/keep"))
	content, err := f.vms.SnapshotV1beta1().VirtualMachineSnapshotContents(ns).Get(context.Background(), "vmsnapshot-content-snap-uid", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, content.OwnerReferences)
}

// fakeFreezer records the freezes and thaws the controller asks virt-api for.
type fakeFreezer struct {
	calls     []string
	freezeErr error
}

func (f *fakeFreezer) Freeze(_ context.Context, namespace, name string, timeout time.Duration) error {
	f.calls = append(f.calls, fmt.Sprintf("freeze %s/%s %s", namespace, name, timeout))
	return f.freezeErr
}

func (f *fakeFreezer) Unfreeze(_ context.Context, namespace, name string) error {
	f.calls = append(f.calls, fmt.Sprintf("unfreeze %s/%s", namespace, name))
	return nil
}

// TestSnapshotIndications: a running VM's guest is frozen through its agent before the
// volumes are cut (GuestAgent); without an agent the snapshot is NoGuestAgent, and a freeze
// that fails leaves it QuiesceFailed, taken all the same.
func TestSnapshotIndications(t *testing.T) {
	online := snapshotv1beta1.VMSnapshotOnlineSnapshotIndication
	tests := []struct {
		name      string
		agent     corev1.ConditionStatus
		freezeErr error
		want      []snapshotv1beta1.Indication
		calls     []string
	}{
		{"no agent", "", nil, []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotNoGuestAgentIndication}, nil},
		{"agent disconnected", corev1.ConditionFalse, nil, []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotNoGuestAgentIndication}, nil},
		{"agent connected", corev1.ConditionTrue, nil, []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotGuestAgentIndication},
			[]string{"freeze default/db 5m0s"}},
		{"freeze fails", corev1.ConditionTrue, errors.New("the agent timed out"), []snapshotv1beta1.Indication{online, snapshotv1beta1.VMSnapshotQuiesceFailedIndication},
			[]string{"freeze default/db 5m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running}}
			if tt.agent != "" {
				vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceAgentConnected, Status: tt.agent}}
			}
			f := newFixture(t, vm("db", v1.RunStrategyAlways), vmi, claim("root-disk", "fast"), vmSnapshot("online", now.Time),
				storageClass("fast", "csi.example.org"), snapshotClass("snap", "csi.example.org", false))
			f.freezer.freezeErr = tt.freezeErr
			require.NoError(t, f.c.syncSnapshot(context.Background(), ns+"/online"))
			got := getSnapshot(t, f, "online")
			assert.Equal(t, tt.want, got.Status.Indications)
			assert.Equal(t, tt.calls, f.freezer.calls)
			_, err := f.vs.SnapshotV1().VolumeSnapshots(ns).Get(context.Background(), VolumeSnapshotName(got, "root"), metav1.GetOptions{})
			assert.NoError(t, err, "the volumes are cut whatever the freeze did")
		})
	}
}

// TestSnapshotThaw: a guest frozen for its snapshot is thawed once the storage has cut every
// volume (creationTime), before they are ready to use, and again when the snapshot ends.
func TestSnapshotThaw(t *testing.T) {
	taken := metav1.NewTime(now.Add(-time.Second))
	tests := []struct {
		name        string
		indications []snapshotv1beta1.Indication
		created     *metav1.Time
		ready       bool
		calls       []string
	}{
		{"not cut yet: stays frozen", []snapshotv1beta1.Indication{"Online", "GuestAgent"}, nil, false, nil},
		{"cut, not ready: thawed", []snapshotv1beta1.Indication{"Online", "GuestAgent"}, &taken, false, []string{"unfreeze default/db"}},
		{"ready: thawed as the VM is released", []snapshotv1beta1.Indication{"Online", "GuestAgent"}, &taken, true, []string{"unfreeze default/db"}},
		{"never frozen: nothing to thaw", []snapshotv1beta1.Indication{"Online", "NoGuestAgent"}, &taken, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := vmSnapshot("before-upgrade", now.Time)
			s.Status = &snapshotv1beta1.VirtualMachineSnapshotStatus{Phase: snapshotv1beta1.InProgress, Indications: tt.indications}
			locked := vm("db", v1.RunStrategyAlways)
			locked.Status.SnapshotInProgress = ptr.To("before-upgrade")
			content := &snapshotv1beta1.VirtualMachineSnapshotContent{
				ObjectMeta: metav1.ObjectMeta{Name: ContentName(s), Namespace: ns, UID: "content-uid"},
				Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{VirtualMachineSnapshotName: ptr.To("before-upgrade"),
					VolumeBackups: []snapshotv1beta1.VolumeBackup{{VolumeName: "root", VolumeSnapshotName: ptr.To("vs-root"),
						PersistentVolumeClaim: snapshotv1beta1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "root-disk"}}}}},
			}
			vs := &vsv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "vs-root", Namespace: ns},
				Status: &vsv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(tt.ready), CreationTime: tt.created}}
			f := newFixture(t, locked, s, content, vs)
			_ = f.c.syncSnapshot(context.Background(), ns+"/before-upgrade") // requeued while not ready
			assert.Equal(t, tt.calls, f.freezer.calls)
		})
	}
}

// TestSnapshotReady: once every VolumeSnapshot is readyToUse, the content and the snapshot
// are ready, the snapshot Succeeded, and the VM unlocked.
func TestSnapshotReady(t *testing.T) {
	tests := []struct {
		name      string
		ready     bool
		wantPhase snapshotv1beta1.VirtualMachineSnapshotPhase
	}{
		{"VolumeSnapshot not ready yet", false, snapshotv1beta1.InProgress},
		{"VolumeSnapshot ready", true, snapshotv1beta1.Succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := vmSnapshot("before-upgrade", now.Time)
			s.Status = &snapshotv1beta1.VirtualMachineSnapshotStatus{Phase: snapshotv1beta1.InProgress}
			locked := vm("db", v1.RunStrategyHalted)
			locked.Status.SnapshotInProgress = ptr.To("before-upgrade")
			locked.Finalizers = []string{"other.example.org/keep", SourceFinalizer}
			content := &snapshotv1beta1.VirtualMachineSnapshotContent{
				ObjectMeta: metav1.ObjectMeta{Name: ContentName(s), Namespace: ns, UID: "content-uid"},
				Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{VirtualMachineSnapshotName: ptr.To("before-upgrade"),
					Source: snapshotv1beta1.SourceSpec{VirtualMachine: &snapshotv1beta1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "vm-uid"}}},
					VolumeBackups: []snapshotv1beta1.VolumeBackup{{VolumeName: "root", VolumeSnapshotName: ptr.To("vs-root"),
						PersistentVolumeClaim: snapshotv1beta1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "root-disk"}}}}},
			}
			taken := metav1.NewTime(now.Add(-time.Minute))
			vs := &vsv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "vs-root", Namespace: ns},
				Status: &vsv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(tt.ready), CreationTime: &taken}}
			f := newFixture(t, locked, s, content, vs)
			err := f.c.syncSnapshot(context.Background(), ns+"/before-upgrade")
			if !tt.ready {
				require.Error(t, err, "requeued for the failure deadline")
			} else {
				require.NoError(t, err)
			}
			got := getSnapshot(t, f, "before-upgrade")
			assert.Equal(t, tt.wantPhase, got.Status.Phase)
			assert.Equal(t, tt.ready, ptr.Deref(got.Status.ReadyToUse, false))
			gotContent, err := f.vms.SnapshotV1beta1().VirtualMachineSnapshotContents(ns).Get(context.Background(), content.Name, metav1.GetOptions{})
			require.NoError(t, err)
			require.NotNil(t, gotContent.Status)
			assert.Equal(t, tt.ready, *gotContent.Status.ReadyToUse)
			vmNow, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "db", metav1.GetOptions{})
			require.NoError(t, err)
			if tt.ready {
				assert.Equal(t, &taken, got.Status.CreationTime)
				assert.Equal(t, corev1.ConditionTrue, condition(got.Status.Conditions, snapshotv1beta1.ConditionReady).Status)
				assert.Nil(t, vmNow.Status.SnapshotInProgress, "unlocked when done")
				assert.Equal(t, []string{"other.example.org/keep"}, vmNow.Finalizers)
			} else {
				assert.Equal(t, ptr.To("before-upgrade"), vmNow.Status.SnapshotInProgress)
				assert.Equal(t, locked.Finalizers, vmNow.Finalizers)
			}
		})
	}
}

// TestSnapshotOutlivesItsVM: once the content exists, a deleted VM does not stop the
// snapshot: it completes from the content and its VolumeSnapshots.
func TestSnapshotOutlivesItsVM(t *testing.T) {
	s := vmSnapshot("before-delete", now.Time)
	s.Status = &snapshotv1beta1.VirtualMachineSnapshotStatus{Phase: snapshotv1beta1.InProgress}
	content := &snapshotv1beta1.VirtualMachineSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: ContentName(s), Namespace: ns},
		Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{VirtualMachineSnapshotName: ptr.To(s.Name),
			Source: snapshotv1beta1.SourceSpec{VirtualMachine: &snapshotv1beta1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "db"}}},
			VolumeBackups: []snapshotv1beta1.VolumeBackup{{VolumeName: "root", VolumeSnapshotName: ptr.To("vs-root"),
				PersistentVolumeClaim: snapshotv1beta1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "root-disk"}}}}},
	}
	vs := &vsv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "vs-root", Namespace: ns}, Status: &vsv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true)}}
	f := newFixture(t, s, content, vs)
	require.NoError(t, f.c.syncSnapshot(context.Background(), ns+"/before-delete"))
	assert.Equal(t, snapshotv1beta1.Succeeded, getSnapshot(t, f, "before-delete").Status.Phase)
}

// TestVanishedSnapshotReleasesItsVM: a snapshot deleted while in progress (or while
// virt-controller was down) leaves no VM locked, nor a guest frozen.
func TestVanishedSnapshotReleasesItsVM(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(fmt.Sprintf("frozen=%v", frozen), func(t *testing.T) {
			locked := vm("db", v1.RunStrategyAlways)
			locked.Status.SnapshotInProgress = ptr.To("gone")
			locked.Finalizers = []string{SourceFinalizer}
			other := vm("web", v1.RunStrategyHalted)
			other.Status.SnapshotInProgress = ptr.To("another")
			other.Finalizers = []string{SourceFinalizer}
			vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}}
			if frozen {
				vmi.Status.FSFreezeStatus = v1.FSFrozen
			}
			f := newFixture(t, locked, other, vmi)
			require.NoError(t, f.c.syncSnapshot(context.Background(), ns+"/gone"))
			vmNow, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "db", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Nil(t, vmNow.Status.SnapshotInProgress)
			assert.Empty(t, vmNow.Finalizers)
			otherNow, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, other, otherNow, "another snapshot's VM is left alone")
			assert.Equal(t, frozen, slices.Contains(f.freezer.calls, "unfreeze "+ns+"/db"), "calls: %v", f.freezer.calls)
		})
	}
}

// TestSnapshotOfADeletedVM: a VM being deleted is not locked; the snapshot waits, then fails.
func TestSnapshotOfADeletedVM(t *testing.T) {
	deleting := vm("db", v1.RunStrategyHalted)
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"other.example.org/keep"}
	f := newFixture(t, deleting, claim("root-disk", "fast"), vmSnapshot("before-upgrade", now.Time),
		storageClass("fast", "csi.example.org"), snapshotClass("snap", "csi.example.org", true))
	err := f.c.syncSnapshot(context.Background(), ns+"/before-upgrade")
	if err != nil {
		assert.Contains(t, err.Error(), "requeue after")
	}
	s := getSnapshot(t, f, "before-upgrade")
	require.NotNil(t, s.Status.Error)
	assert.Equal(t, "VirtualMachine db is being deleted", *s.Status.Error.Message)
	vmNow, err := f.kv.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, vmNow.Status.SnapshotInProgress)
	assert.Equal(t, []string{"other.example.org/keep"}, vmNow.Finalizers)
}

// TestVolumesOf: claim and DataVolume volumes are snapshotted (a DataVolume's claim has its
// name); the others are left out.
func TestVolumesOf(t *testing.T) {
	m := vm("db", v1.RunStrategyAlways)
	m.Spec.Template.Spec.Volumes = append(m.Spec.Template.Spec.Volumes,
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "db-data"}}})
	claims, excluded := volumesOf(m)
	assert.Equal(t, []claimVolume{{volume: "root", claim: "root-disk"}, {volume: "data", claim: "db-data"}}, claims)
	assert.Equal(t, []string{"cloudinit"}, excluded)
}
