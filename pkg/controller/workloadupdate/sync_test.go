package workloadupdate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	oldImage = "registry.test/hangar/virt-launcher:v0.1.0@sha256:old"
	newImage = "registry.test/hangar/virt-launcher:v0.2.0@sha256:new"
)

// running is a Running, migratable instance on node with one launcher pod (UID pod-<name>).
func running(name, node string, mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: node,
			ActivePods: map[types.UID]string{types.UID("pod-" + name): node},
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func notMigratable(vmi *v1.VirtualMachineInstance) {
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceIsMigratable,
		Status: corev1.ConditionFalse, Message: "cannot migrate VMI which does not use masquerade to connect to the pod network"}}
}

func launcherPod(vmi *v1.VirtualMachineInstance, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: "virt-launcher-" + vmi.Name, UID: types.UID("pod-" + vmi.Name),
			Labels: map[string]string{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(vmi.UID)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: layout.ComputeContainer, Image: image}}},
	}
}

func config(mutate ...func(*clusterconfig.ClusterConfig)) *clusterconfig.ClusterConfig {
	c := clusterconfig.Defaults()
	c.LauncherImage = newImage
	c.WorkloadUpdates = clusterconfig.WorkloadUpdates{LiveMigrate: true, BatchSize: 2, BatchInterval: time.Minute}
	for _, m := range mutate {
		m(&c)
	}
	return &c
}

func TestDecide(t *testing.T) {
	inFlight := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: "b"}, Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationRunning}}
	failed := func(ago time.Duration) *v1.VirtualMachineInstanceMigration {
		return &v1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f", Annotations: map[string]string{MigrationAnnotation: newImage}},
			Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "a"},
			Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationFailed, PhaseTransitionTimestamps: []v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
				{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: metav1.NewTime(now.Add(-ago))}}},
		}
	}
	tests := []struct {
		name       string
		outdated   []*v1.VirtualMachineInstance
		migrations []*v1.VirtualMachineInstanceMigration
		cfg        *clusterconfig.ClusterConfig
		batch      batch
		migrate    []string
		cannot     []string
		retryIn    time.Duration
	}{
		{name: "a batch at a time", outdated: []*v1.VirtualMachineInstance{running("c", "n1"), running("a", "n1"), running("b", "n2")},
			batch: batch{left: 2}, migrate: []string{"a", "b"}},
		{name: "the batch is spent: wait for the interval", outdated: []*v1.VirtualMachineInstance{running("a", "n1")},
			batch: batch{left: 0, nextAt: now.Add(20 * time.Second)}, retryIn: 20 * time.Second},
		{name: "one that cannot migrate stays and is reported", outdated: []*v1.VirtualMachineInstance{running("a", "n1", notMigratable), running("b", "n1")},
			batch: batch{left: 2}, migrate: []string{"b"}, cannot: []string{"a"}},
		{name: "one moving already", outdated: []*v1.VirtualMachineInstance{running("a", "n1"), running("b", "n1")},
			migrations: []*v1.VirtualMachineInstanceMigration{inFlight}, batch: batch{left: 2}, migrate: []string{"a"}},
		{name: "one evacuating", outdated: []*v1.VirtualMachineInstance{running("a", "n1", func(v *v1.VirtualMachineInstance) {
			v.Status.EvacuationNodeName = "n1"
		})}, batch: batch{left: 2}},
		{name: "a failed update backs off", outdated: []*v1.VirtualMachineInstance{running("a", "n1")},
			migrations: []*v1.VirtualMachineInstanceMigration{failed(4 * time.Second)}, batch: batch{left: 2}, retryIn: 6 * time.Second},
		{name: "after the back-off, again", outdated: []*v1.VirtualMachineInstance{running("a", "n1")},
			migrations: []*v1.VirtualMachineInstanceMigration{failed(time.Minute)}, batch: batch{left: 2}, migrate: []string{"a"}},
		{name: "within the migration limits", outdated: []*v1.VirtualMachineInstance{running("a", "n1"), running("c", "n1")},
			migrations: []*v1.VirtualMachineInstanceMigration{inFlight},
			cfg:        config(func(c *clusterconfig.ClusterConfig) { c.Migrations.ParallelMigrationsPerCluster = ptr.To[uint32](1) }),
			batch:      batch{left: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == nil {
				cfg = config()
			}
			p := decide(tt.outdated, tt.migrations, cfg, nil, tt.batch, now)
			assert.Equal(t, tt.migrate, names(p.migrate))
			assert.Equal(t, tt.cannot, names(p.cannot))
			assert.Equal(t, tt.retryIn, p.retryIn)
		})
	}
}

func names(vmis []*v1.VirtualMachineInstance) []string {
	var out []string
	for _, v := range vmis {
		out = append(out, v.Name)
	}
	return out
}

// TestSync: outdated instances are labelled and migrated a batch at a time; the current one
// loses its label; without LiveMigrate only the labels change.
func TestSync(t *testing.T) {
	current := running("current", "n1", func(v *v1.VirtualMachineInstance) { v.Labels = map[string]string{OutdatedLabel: ""} })
	vmis := []*v1.VirtualMachineInstance{running("a", "n1"), running("b", "n1"), running("c", "n2"), current}
	var objs []runtime.Object
	for _, v := range vmis {
		objs = append(objs, v)
	}
	kv := kvfake.NewSimpleClientset(objs...)
	testutil.GenerateNames(kv)
	factory := kvinformers.NewSharedInformerFactory(kv, 0)
	vmiInformer, migrationInformer := factory.Kubevirt().V1().VirtualMachineInstances(), factory.Kubevirt().V1().VirtualMachineInstanceMigrations()
	podInformer := kubeinformers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0).Core().V1().Pods()
	for _, v := range vmis {
		require.NoError(t, vmiInformer.Informer().GetIndexer().Add(v))
		image := oldImage
		if v.Name == "current" {
			image = newImage
		}
		require.NoError(t, podInformer.Informer().GetIndexer().Add(launcherPod(v, image)))
	}
	store := clusterconfig.NewStore(*config(func(c *clusterconfig.ClusterConfig) { c.WorkloadUpdates.LiveMigrate = false }))
	recorder := record.NewFakeRecorder(10)
	c, err := New(kv, vmiInformer, migrationInformer, podInformer, store, recorder)
	require.NoError(t, err)
	c.now = func() time.Time { return now }
	ctx := context.Background()

	require.NoError(t, c.sync(ctx))
	for _, v := range vmis {
		got, err := kv.KubevirtV1().VirtualMachineInstances("ns").Get(ctx, v.Name, metav1.GetOptions{})
		require.NoError(t, err)
		_, labelled := got.Labels[OutdatedLabel]
		assert.Equal(t, v.Name != "current", labelled, v.Name)
	}
	migrations, err := kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, migrations.Items, "no method, no migration")

	store.Apply(&corev1.ConfigMap{Data: map[string]string{clusterconfig.KeyLauncherImage: newImage,
		clusterconfig.KeyWorkloadUpdateMethods: "LiveMigrate", clusterconfig.KeyBatchEvictionSize: "2"}})
	require.NoError(t, c.sync(ctx))
	// The cache has not seen the two yet; c waits for the next batch, a minute on.
	assert.Equal(t, controllerutil.RequeueAfter(time.Minute), c.sync(ctx))
	migrations, err = kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, migrations.Items, 2, "one batch")
	for _, m := range migrations.Items {
		assert.Regexp(t, "^kubevirt-workload-update-", m.Name)
		assert.Equal(t, newImage, m.Annotations[MigrationAnnotation])
	}
	assert.ElementsMatch(t, []string{"a", "b"}, []string{migrations.Items[0].Spec.VMIName, migrations.Items[1].Spec.VMIName})
}
