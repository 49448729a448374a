package migration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	metricstestutil "k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
)

type fixture struct {
	t    *testing.T
	c    *Controller
	kv   *kvfake.Clientset
	kube *k8sfake.Clientset
	// vmis is the instance informer's cache, for tests that sync more than once.
	vmis cache.Indexer
}

func newFixture(t *testing.T, mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance, pods ...*corev1.Pod) *fixture {
	t.Helper()
	kvObjs := []runtime.Object{mig, vmi}
	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	handler := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hangar", Name: "virt-handler-b", Labels: map[string]string{"app.kubernetes.io/name": "virt-handler"}},
		Spec:       corev1.PodSpec{NodeName: "node-b"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.2.7"},
	}
	kubeObjs = append(kubeObjs, handler)
	f := &fixture{t: t, kv: kvfake.NewSimpleClientset(kvObjs...), kube: k8sfake.NewSimpleClientset(kubeObjs...)}
	testutil.GenerateNames(f.kube)
	testutil.BumpVersions(f.kv)
	kvf := kvinformers.NewSharedInformerFactory(f.kv, 0)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	migInf, vmiInf := kvf.Kubevirt().V1().VirtualMachineInstanceMigrations(), kvf.Kubevirt().V1().VirtualMachineInstances()
	podInf := kf.Core().V1().Pods()
	handlerInf := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().Pods()
	cfg := clusterconfig.Defaults()
	c, err := New(f.kv, f.kube, migInf, vmiInf, podInf, handlerInf, kf.Core().V1().PersistentVolumeClaims(), clusterconfig.NewStore(cfg), record.NewFakeRecorder(100), Options{
		HandlerNamespace: "hangar", HandlerPort: 18187,
		HandlerSelector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "virt-handler"}),
	})
	require.NoError(t, err)
	require.NoError(t, migInf.Informer().GetIndexer().Add(mig))
	require.NoError(t, vmiInf.Informer().GetIndexer().Add(vmi))
	for _, p := range pods {
		require.NoError(t, podInf.Informer().GetIndexer().Add(p))
	}
	require.NoError(t, handlerInf.Informer().GetIndexer().Add(handler))
	f.c, f.vmis = c, vmiInf.Informer().GetIndexer()
	return f
}

// observe brings the controller's caches up to what it wrote, as its informers would.
func (f *fixture) observe() {
	f.t.Helper()
	require.NoError(f.t, f.c.migIndexer.Update(f.migration()))
	require.NoError(f.t, f.vmis.Update(f.instance()))
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.sync(context.Background(), "ns/mig"); err != nil {
		var requeue controllerutil.RequeueAfter
		require.ErrorAs(f.t, err, &requeue, "sync")
	}
}

func (f *fixture) migration() *v1.VirtualMachineInstanceMigration {
	m, err := f.kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").Get(context.Background(), "mig", metav1.GetOptions{})
	require.NoError(f.t, err)
	return m
}

func (f *fixture) instance() *v1.VirtualMachineInstance {
	v, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").Get(context.Background(), "vm", metav1.GetOptions{})
	require.NoError(f.t, err)
	return v
}

func newMigration(phase v1.VirtualMachineInstanceMigrationPhase, mutate ...func(*v1.VirtualMachineInstanceMigration)) *v1.VirtualMachineInstanceMigration {
	m := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mig", UID: "mig-uid", CreationTimestamp: metav1.Now(),
			Finalizers: []string{v1.VirtualMachineInstanceMigrationFinalizer}},
		Spec:   v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
		Status: v1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
	if phase != "" {
		m.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{{Phase: phase, PhaseTransitionTimestamp: metav1.Now()}}
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func runningVMI(mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	v := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "vmi-uid"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: "node-a",
			ActivePods: map[types.UID]string{"source-uid": "node-a"}},
	}
	for _, f := range mutate {
		f(v)
	}
	return v
}

func launcherPod(name string, uid types.UID, node string, job types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid,
		Labels:          map[string]string{v1.AppLabel: v1.LauncherAppLabelValue},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm", UID: "vmi-uid", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if job != "" {
		p.Labels[v1.MigrationJobLabel] = string(job)
	}
	return p
}

func migrating(mutate ...func(*v1.VirtualMachineInstanceMigrationState)) func(*v1.VirtualMachineInstance) {
	return func(v *v1.VirtualMachineInstance) {
		v.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUid: "mig-uid", SourceNode: "node-a", SourcePod: "source", TargetPod: "target"}
		for _, m := range mutate {
			m(v.Status.MigrationState)
		}
	}
}

func TestPendingMigrationPlacesATargetPodAwayFromTheSource(t *testing.T) {
	f := newFixture(t, newMigration(v1.MigrationPending), runningVMI(), launcherPod("source", "source-uid", "node-a", ""))
	f.sync()
	assert.Equal(t, v1.MigrationScheduling, f.migration().Status.Phase)
	pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: v1.MigrationJobLabel + "=mig-uid"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	terms := pods.Items[0].Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 1)
	assert.Contains(t, terms[0].MatchExpressions, corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-a"}})
	ms := f.instance().Status.MigrationState
	require.NotNil(t, ms)
	assert.Equal(t, types.UID("mig-uid"), ms.MigrationUid)
	assert.Equal(t, "node-a", ms.SourceNode)
	assert.Equal(t, "source", ms.SourcePod)
	assert.Equal(t, pods.Items[0].Name, ms.TargetPod)
	assert.Empty(t, ms.TargetNode, "no target node before the pod is scheduled")
	assert.Equal(t, map[types.UID]string{"source-uid": "node-a", pods.Items[0].UID: ""}, f.instance().Status.ActivePods,
		"the target is bound by the UID of the pod created, from the start")
}

// plantedPod is a pod a tenant with pods/create made to pass for the migration's target: its
// label, a controller reference to the instance, a launcher's labels, a name like a
// launcher's, on a node of their choosing.
func plantedPod(name string, node string) *corev1.Pod {
	p := launcherPod(name, types.UID(name+"-uid"), node, "mig-uid")
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Minute)) // newer than the real one
	return p
}

// A pod labelled with the migration's UID by someone else is never taken for its target: not
// when the target is placed (it is deleted, not adopted), not once the real one exists.
func TestPlantedTargetPodIsIgnored(t *testing.T) {
	t.Run("before the target is made", func(t *testing.T) {
		f := newFixture(t, newMigration(v1.MigrationPending), runningVMI(), launcherPod("source", "source-uid", "node-a", ""),
			plantedPod("planted", "node-c"))
		f.sync()
		assert.Equal(t, v1.MigrationPending, f.migration().Status.Phase, "no target yet")
		assert.Nil(t, f.instance().Status.MigrationState, "the planted pod was not adopted")
		_, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "planted", metav1.GetOptions{})
		assert.Error(t, err, "the planted pod is deleted")
	})
	t.Run("beside the real target", func(t *testing.T) {
		vmi := runningVMI(migrating(), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "" })
		f := newFixture(t, newMigration(v1.MigrationScheduling), vmi, launcherPod("source", "source-uid", "node-a", ""),
			launcherPod("target", "target-uid", "node-b", "mig-uid"), plantedPod("planted", "node-c"))
		f.sync()
		got := f.instance()
		assert.Equal(t, "node-b", got.Status.MigrationState.TargetNode, "the real target's node, not the planted pod's")
		assert.Equal(t, map[types.UID]string{"source-uid": "node-a", "target-uid": "node-b"}, got.Status.ActivePods)
	})
	t.Run("with the real target's name, once it is gone", func(t *testing.T) {
		vmi := runningVMI(migrating(), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "" })
		impostor := plantedPod("target", "node-c") // the same name, another UID
		impostor.UID = "impostor-uid"
		mig := newMigration(v1.MigrationScheduling, func(m *v1.VirtualMachineInstanceMigration) {
			m.Status.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = metav1.NewTime(time.Now().Add(-time.Minute))
		})
		f := newFixture(t, mig, vmi, launcherPod("source", "source-uid", "node-a", ""), impostor)
		f.sync()
		assert.Equal(t, v1.MigrationFailed, f.migration().Status.Phase, "the target is gone; the impostor is not it")
		got := f.instance()
		assert.Equal(t, map[types.UID]string{"source-uid": "node-a"}, got.Status.ActivePods)
		assert.Empty(t, got.Status.MigrationState.TargetNode)
	})
}

func TestMigrationOfAStoppedInstanceFails(t *testing.T) {
	f := newFixture(t, newMigration(v1.MigrationPending), runningVMI(func(v *v1.VirtualMachineInstance) { v.Status.Phase = v1.Succeeded }))
	f.sync()
	assert.Equal(t, v1.MigrationFailed, f.migration().Status.Phase)
}

func TestScheduledTargetIsAnnouncedToTheHandlers(t *testing.T) {
	target := launcherPod("target", "target-uid", "node-b", "mig-uid")
	// Recorded when the controller created it, before it had a node.
	f := newFixture(t, newMigration(v1.MigrationScheduling), runningVMI(migrating(), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "" }),
		launcherPod("source", "source-uid", "node-a", ""), target)
	f.sync()
	assert.Equal(t, v1.MigrationScheduled, f.migration().Status.Phase)
	vmi := f.instance()
	assert.Equal(t, "node-b", vmi.Status.MigrationState.TargetNode)
	assert.Equal(t, "10.0.2.7:18187", vmi.Status.MigrationState.TargetNodeAddress, "the target node's handler")
	assert.Equal(t, map[types.UID]string{"source-uid": "node-a", "target-uid": "node-b"}, vmi.Status.ActivePods)
	assert.Equal(t, "node-a", vmi.Status.NodeName, "still the source's")
}

func TestCompletedMigrationHandsTheInstanceOver(t *testing.T) {
	target := launcherPod("target", "target-uid", "node-b", "mig-uid")
	target.Status.PodIP = "10.244.2.9"
	vmi := runningVMI(migrating(func(ms *v1.VirtualMachineInstanceMigrationState) {
		ms.TargetNode, ms.TargetNodeAddress, ms.Completed = "node-b", "10.0.2.7:18187", true
		ms.StartTimestamp, ms.EndTimestamp = ptr.To(metav1.Now()), ptr.To(metav1.Now())
	}), func(v *v1.VirtualMachineInstance) {
		v.Status.ActivePods["target-uid"] = "node-b"
		v.Status.Interfaces = []v1.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: "10.244.1.5", IPs: []string{"10.244.1.5"}}}
	})
	f := newFixture(t, newMigration(v1.MigrationRunning), vmi, launcherPod("source", "source-uid", "node-a", ""), target)
	f.sync()
	assert.Equal(t, v1.MigrationSucceeded, f.migration().Status.Phase)
	got := f.instance()
	assert.Equal(t, "node-b", got.Status.NodeName)
	assert.Equal(t, map[types.UID]string{"target-uid": "node-b"}, got.Status.ActivePods)
	assert.Equal(t, "10.244.2.9", got.Status.Interfaces[0].IP)
	_, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "source", metav1.GetOptions{})
	assert.True(t, err != nil, "the source pod is deleted")
	_, err = f.kube.CoreV1().Pods("ns").Get(context.Background(), "target", metav1.GetOptions{})
	assert.NoError(t, err, "the target pod stays")
}

func TestFailedMigrationRemovesTheTarget(t *testing.T) {
	target := launcherPod("target", "target-uid", "node-b", "mig-uid")
	vmi := runningVMI(migrating(func(ms *v1.VirtualMachineInstanceMigrationState) {
		ms.TargetNode, ms.Failed, ms.FailureReason = "node-b", true, "MigrationFailed: connection reset"
	}), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "node-b" })
	f := newFixture(t, newMigration(v1.MigrationRunning), vmi, launcherPod("source", "source-uid", "node-a", ""), target)
	f.sync()
	m := f.migration()
	assert.Equal(t, v1.MigrationFailed, m.Status.Phase)
	assert.Equal(t, "MigrationFailed: connection reset", m.Status.MigrationState.FailureReason)
	got := f.instance()
	assert.Equal(t, "node-a", got.Status.NodeName)
	assert.Equal(t, map[types.UID]string{"source-uid": "node-a"}, got.Status.ActivePods)
	_, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "target", metav1.GetOptions{})
	assert.Error(t, err, "the target pod is deleted")
}

// TestSyncWaitsForItsOwnInstanceWrite: the migration's informer may deliver its Scheduling
// status before the instance's informer delivers the migration state written with it. A
// sync from that older instance must not take it for another migration's and fail this one
// (which left the instance naming a failed migration as under way: every later migration of
// it waited for good).
func TestSyncWaitsForItsOwnInstanceWrite(t *testing.T) {
	vmi := runningVMI(func(v *v1.VirtualMachineInstance) { v.ResourceVersion = "1" })
	f := newFixture(t, newMigration(v1.MigrationPending), vmi, launcherPod("source", "source-uid", "node-a", ""))
	f.sync()
	require.Equal(t, v1.MigrationScheduling, f.migration().Status.Phase)
	require.NoError(t, f.c.migIndexer.Update(f.migration())) // the instance's cache still has version 1

	f.sync()
	m := f.migration()
	assert.Equal(t, v1.MigrationScheduling, m.Status.Phase, "not failed: %+v", m.Status.MigrationState)
	pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: v1.MigrationJobLabel + "=mig-uid"})
	require.NoError(t, err)
	assert.Len(t, pods.Items, 1, "the target pod stays")
}

// TestNewMigrationGetsItsFinalizerInASyncOfItsOwn: a user's migration has no finalizer yet.
// Were it added and the status written in one sync, the cache could then show the version
// in between (finalizer, no phase): a sync from it would take the target just created for
// a stray and delete it (the migration then failed: "the target pod ended").
func TestNewMigrationGetsItsFinalizerInASyncOfItsOwn(t *testing.T) {
	mig := newMigration("", func(m *v1.VirtualMachineInstanceMigration) { m.Finalizers, m.ResourceVersion = nil, "1" })
	f := newFixture(t, mig, runningVMI(), launcherPod("source", "source-uid", "node-a", ""))
	f.sync()
	withFinalizer := f.migration()
	assert.Contains(t, withFinalizer.Finalizers, v1.VirtualMachineInstanceMigrationFinalizer)
	assert.Empty(t, withFinalizer.Status.Phase, "nothing else in the sync that added the finalizer")
	targets := func() []corev1.Pod {
		pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: v1.MigrationJobLabel + "=mig-uid"})
		require.NoError(t, err)
		return pods.Items
	}
	assert.Empty(t, targets())

	f.observe()
	f.sync()
	require.Equal(t, v1.MigrationScheduling, f.migration().Status.Phase)
	require.Len(t, targets(), 1)
}

// TestFailedMigrationTheInstanceStillRunsIsEnded: a migration Failed while the instance
// still names it as under way (a lost status write) ends there too, so that the instance's
// next migration does not wait for it.
func TestFailedMigrationTheInstanceStillRunsIsEnded(t *testing.T) {
	vmi := runningVMI(migrating(), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "" })
	mig := newMigration(v1.MigrationFailed, func(m *v1.VirtualMachineInstanceMigration) {
		m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUid: "mig-uid", Failed: true,
			FailureReason: "the target pod is gone"}
	})
	f := newFixture(t, mig, vmi, launcherPod("source", "source-uid", "node-a", ""))
	f.sync()
	ms := f.instance().Status.MigrationState
	require.NotNil(t, ms)
	assert.True(t, ms.Failed)
	assert.Equal(t, "the target pod is gone", ms.FailureReason)
	assert.Equal(t, map[types.UID]string{"source-uid": "node-a"}, f.instance().Status.ActivePods)
}

func TestDeletedMigrationAsksTheSourceToAbort(t *testing.T) {
	vmi := runningVMI(migrating(func(ms *v1.VirtualMachineInstanceMigrationState) {
		ms.TargetNode, ms.TargetNodeAddress, ms.StartTimestamp = "node-b", "10.0.2.7:18187", ptr.To(metav1.Now())
	}), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "node-b" })
	mig := newMigration(v1.MigrationRunning, func(m *v1.VirtualMachineInstanceMigration) {
		m.DeletionTimestamp = ptr.To(metav1.NewTime(time.Now()))
	})
	f := newFixture(t, mig, vmi, launcherPod("source", "source-uid", "node-a", ""), launcherPod("target", "target-uid", "node-b", "mig-uid"))
	f.sync()
	assert.True(t, f.instance().Status.MigrationState.AbortRequested)
	m := f.migration()
	assert.Equal(t, v1.MigrationRunning, m.Status.Phase, "the migration ends when the source says so")
	assert.Contains(t, m.Finalizers, v1.VirtualMachineInstanceMigrationFinalizer)
	require.NotEmpty(t, m.Status.Conditions)
	assert.Equal(t, v1.MigrationAbortRequested, m.Status.Conditions[0].Type)
}

func TestParallelMigrationsPerNodeAreLimited(t *testing.T) {
	f := newFixture(t, newMigration(v1.MigrationPending), runningVMI(), launcherPod("source", "source-uid", "node-a", ""))
	for i, name := range []string{"other-1", "other-2"} {
		other := newMigration(v1.MigrationRunning, func(m *v1.VirtualMachineInstanceMigration) {
			m.Name, m.UID = name, types.UID(name)
			m.Spec.VMIName = "vm-" + string(rune('x'+i))
			m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: "node-a"}
		})
		require.NoError(t, f.c.migIndexer.Add(other))
	}
	f.sync()
	assert.Equal(t, v1.MigrationPending, f.migration().Status.Phase, "two migrations out of node-a already")
	pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: v1.MigrationJobLabel})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
}

func TestMigrationMetrics(t *testing.T) {
	done := newMigration(v1.MigrationSucceeded, func(m *v1.VirtualMachineInstanceMigration) {
		m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{StartTimestamp: ptr.To(metav1.Unix(1700000000, 0)), EndTimestamp: ptr.To(metav1.Unix(1700000042, 0))}
	})
	f := newFixture(t, done, runningVMI())
	pending := newMigration(v1.MigrationPending, func(m *v1.VirtualMachineInstanceMigration) { m.Name, m.UID = "other", "other" })
	require.NoError(t, f.c.migIndexer.Add(pending))
	err := metricstestutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(`
# HELP kubevirt_vmi_migration_end_time_seconds [ALPHA] The time at which the migration ended.
# TYPE kubevirt_vmi_migration_end_time_seconds gauge
kubevirt_vmi_migration_end_time_seconds{namespace="ns",vmi="vm",vmim="mig"} 1.700000042e+09
# HELP kubevirt_vmi_migration_succeeded [ALPHA] Indicates if the VMI migration succeeded.
# TYPE kubevirt_vmi_migration_succeeded gauge
kubevirt_vmi_migration_succeeded{namespace="ns",vmi="vm",vmim="mig"} 1
# HELP kubevirt_vmi_migrations_in_pending_phase [ALPHA] Number of current pending migrations.
# TYPE kubevirt_vmi_migrations_in_pending_phase gauge
kubevirt_vmi_migrations_in_pending_phase 1
`), "kubevirt_vmi_migration_end_time_seconds", "kubevirt_vmi_migration_succeeded", "kubevirt_vmi_migrations_in_pending_phase")
	require.NoError(t, err)
}

func TestOnlyTheOldestOfRacingMigrationsRuns(t *testing.T) {
	late := newMigration(v1.MigrationPending, func(m *v1.VirtualMachineInstanceMigration) {
		m.CreationTimestamp = metav1.NewTime(time.Now())
	})
	f := newFixture(t, late, runningVMI(), launcherPod("source", "source-uid", "node-a", ""))
	early := newMigration(v1.MigrationPending, func(m *v1.VirtualMachineInstanceMigration) {
		m.Name, m.UID, m.CreationTimestamp = "early", "early-uid", metav1.NewTime(time.Now().Add(-time.Second))
	})
	require.NoError(t, f.c.migIndexer.Add(early))
	f.sync()
	assert.Equal(t, v1.MigrationFailed, f.migration().Status.Phase, "the later one gives way")
	pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: v1.MigrationJobLabel})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
}

// A source launcher is the tenant's: it may report a migration started (with any start
// time) and never report its end. The controller holds the migration to runningBound by its
// own clock: past it, the source is asked to abort; past abortGrace more, the migration
// fails without the source, the target pod goes and the instance stays on its source, so the
// cluster's and the node's migration slots come free.
func TestMigrationThatNeverEndsIsEndedByTheController(t *testing.T) {
	vmi := runningVMI(migrating(func(ms *v1.VirtualMachineInstanceMigrationState) {
		// A start in the future: nothing the source says counts toward the bound.
		ms.TargetNode, ms.TargetNodeAddress, ms.StartTimestamp = "node-b", "10.0.2.7:18187", ptr.To(metav1.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	}), func(v *v1.VirtualMachineInstance) { v.Status.ActivePods["target-uid"] = "node-b" })
	bound := runningBound(vmi, clusterconfig.DefaultMigrations())
	assert.Equal(t, 150*time.Second+150*time.Second, bound, "128Mi of memory: one GiB begun, and the progress timeout")
	runningSince := time.Now()
	mig := newMigration(v1.MigrationRunning, func(m *v1.VirtualMachineInstanceMigration) {
		m.Status.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = metav1.NewTime(runningSince)
	})
	f := newFixture(t, mig, vmi, launcherPod("source", "source-uid", "node-a", ""), launcherPod("target", "target-uid", "node-b", "mig-uid"))

	at := func(d time.Duration) error {
		f.c.now = func() time.Time { return runningSince.Add(d) }
		f.observe()
		return f.c.sync(context.Background(), "ns/mig")
	}

	err := at(bound - time.Minute)
	var requeue controllerutil.RequeueAfter
	require.ErrorAs(t, err, &requeue, "woken again at the bound, whatever the source does")
	assert.InDelta(t, float64(time.Minute), float64(requeue), float64(2*time.Second))
	assert.False(t, f.instance().Status.MigrationState.AbortRequested)

	require.ErrorAs(t, at(bound+time.Second), &requeue)
	assert.True(t, f.instance().Status.MigrationState.AbortRequested, "past the bound the source is asked to abort")
	assert.Equal(t, v1.MigrationRunning, f.migration().Status.Phase)

	// The source ignores it.
	require.NoError(t, at(bound+abortGrace+2*time.Second))
	m := f.migration()
	assert.Equal(t, v1.MigrationFailed, m.Status.Phase)
	assert.Contains(t, m.Status.MigrationState.FailureReason, "the migration ran longer than 5m0s")
	got := f.instance()
	assert.Equal(t, "node-a", got.Status.NodeName, "the instance stays on its source")
	assert.Equal(t, map[types.UID]string{"source-uid": "node-a"}, got.Status.ActivePods)
	assert.True(t, got.Status.MigrationState.Failed)
	_, err = f.kube.CoreV1().Pods("ns").Get(context.Background(), "target", metav1.GetOptions{})
	assert.Error(t, err, "the target pod is deleted")
	f.observe()
	cluster, byNode := f.c.activeCounts()
	assert.Zero(t, cluster, "no migration slot held")
	assert.Zero(t, byNode["node-a"])
}

func TestRunningBound(t *testing.T) {
	m := clusterconfig.DefaultMigrations()
	big := runningVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("4Gi")
		v.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("2Gi")}}},
			{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "example/disk"}}},
		}
	})
	assert.Equal(t, (16*150+150)*time.Second, runningBound(big, m), "4 GiB of memory, 2 of empty disk, 10 for the image")
	m.AllowPostCopy = ptr.To(true)
	assert.Equal(t, (2*16*150+150)*time.Second, runningBound(big, m), "post-copy may follow the completion time")
}
