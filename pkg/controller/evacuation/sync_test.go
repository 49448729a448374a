package evacuation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// marked is a Running, migratable instance on node, marked to leave it.
func marked(name, node string, mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1.VirtualMachineInstanceSpec{EvictionStrategy: ptr.To(v1.EvictionStrategyLiveMigrate)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: node, EvacuationNodeName: node,
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func migrationOf(vmi string, phase v1.VirtualMachineInstanceMigrationPhase, mutate ...func(*v1.VirtualMachineInstanceMigration)) *v1.VirtualMachineInstanceMigration {
	m := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-" + vmi + "-" + string(phase), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func evacuationFailedAgo(ago time.Duration) func(*v1.VirtualMachineInstanceMigration) {
	return func(m *v1.VirtualMachineInstanceMigration) {
		m.Annotations = map[string]string{v1.EvacuationMigrationAnnotation: "node-a"}
		m.Name += fmt.Sprint(ago)
		m.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: metav1.NewTime(now.Add(-ago))}}
	}
}

func names(vmis []*v1.VirtualMachineInstance) []string {
	var out []string
	for _, v := range vmis {
		out = append(out, v.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	cfg := clusterconfig.Defaults() // 5 per cluster, 2 per node
	tests := []struct {
		name       string
		vmis       []*v1.VirtualMachineInstance
		migrations []*v1.VirtualMachineInstanceMigration
		pending    map[string]bool
		cluster    v1.EvictionStrategy
		want       []string
		wantRetry  time.Duration
	}{
		{name: "a marked instance gets a migration", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a")}, want: []string{"a"}},
		{name: "not marked, or marked for a node it has left", vmis: []*v1.VirtualMachineInstance{
			marked("a", "node-a", func(v *v1.VirtualMachineInstance) { v.Status.EvacuationNodeName = "" }),
			marked("b", "node-a", func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-b" }),
		}},
		{name: "two per node, oldest-name first", vmis: []*v1.VirtualMachineInstance{
			marked("c", "node-a"), marked("a", "node-a"), marked("b", "node-a"),
		}, want: []string{"a", "b"}},
		{name: "five in the cluster", vmis: []*v1.VirtualMachineInstance{
			marked("a1", "node-a"), marked("a2", "node-a"), marked("b1", "node-b"), marked("b2", "node-b"),
			marked("c1", "node-c"), marked("c2", "node-c"),
		}, want: []string{"a1", "a2", "b1", "b2", "c1"}},
		{name: "migrations in flight use slots, final ones do not", vmis: []*v1.VirtualMachineInstance{
			marked("a", "node-a"), marked("b", "node-a"), marked("busy", "node-a", func(v *v1.VirtualMachineInstance) { v.Status.EvacuationNodeName = "" }),
		}, migrations: []*v1.VirtualMachineInstanceMigration{
			migrationOf("busy", v1.MigrationRunning), migrationOf("a", v1.MigrationSucceeded),
		}, want: []string{"a"}},
		{name: "an instance with a migration in flight gets no other", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a")},
			migrations: []*v1.VirtualMachineInstanceMigration{migrationOf("a", v1.MigrationPending)}},
		{name: "a creation the cache does not show yet counts", vmis: []*v1.VirtualMachineInstance{
			marked("a", "node-a"), marked("b", "node-a"), marked("c", "node-a"),
		}, pending: map[string]bool{"ns/a": true}, want: []string{"b"}},
		{name: "LiveMigrate but not migratable waits", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a", func(v *v1.VirtualMachineInstance) {
			v.Status.Conditions[0].Status = corev1.ConditionFalse
		})}},
		{name: "External is left to others", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a", func(v *v1.VirtualMachineInstance) {
			v.Spec.EvictionStrategy = ptr.To(v1.EvictionStrategyExternal)
		})}},
		{name: "the cluster's strategy applies", cluster: v1.EvictionStrategyLiveMigrateIfPossible,
			vmis: []*v1.VirtualMachineInstance{marked("a", "node-a", func(v *v1.VirtualMachineInstance) { v.Spec.EvictionStrategy = nil })}, want: []string{"a"}},
		{name: "no strategy anywhere", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a", func(v *v1.VirtualMachineInstance) { v.Spec.EvictionStrategy = nil })}},
		{name: "not running or being deleted", vmis: []*v1.VirtualMachineInstance{
			marked("a", "node-a", func(v *v1.VirtualMachineInstance) { v.Status.Phase = v1.Succeeded }),
			marked("b", "node-a", func(v *v1.VirtualMachineInstance) { v.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }),
		}},
		{name: "a failed evacuation backs off", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a")},
			migrations: []*v1.VirtualMachineInstanceMigration{migrationOf("a", v1.MigrationFailed, evacuationFailedAgo(4*time.Second))},
			wantRetry:  6 * time.Second},
		{name: "two failures back off twice as long", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a")},
			migrations: []*v1.VirtualMachineInstanceMigration{
				migrationOf("a", v1.MigrationFailed, evacuationFailedAgo(time.Minute)),
				migrationOf("a", v1.MigrationFailed, evacuationFailedAgo(5*time.Second)),
			}, wantRetry: 15 * time.Second},
		{name: "after the back-off, again", vmis: []*v1.VirtualMachineInstance{marked("a", "node-a")},
			migrations: []*v1.VirtualMachineInstanceMigration{migrationOf("a", v1.MigrationFailed, evacuationFailedAgo(time.Minute))},
			want:       []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			c.EvictionStrategy = tt.cluster
			p := decide(tt.vmis, tt.migrations, &c, tt.pending, now)
			assert.Equal(t, tt.want, names(p.migrate))
			assert.Equal(t, tt.wantRetry, p.retryIn)
		})
	}
}

func TestDecideHonoursConfiguredLimits(t *testing.T) {
	cfg := clusterconfig.Defaults()
	cfg.Migrations.ParallelMigrationsPerCluster = ptr.To[uint32](1)
	p := decide([]*v1.VirtualMachineInstance{marked("a", "node-a"), marked("b", "node-b")}, nil, &cfg, nil, now)
	assert.Equal(t, []string{"a"}, names(p.migrate))
	cfg = clusterconfig.Defaults()
	cfg.Migrations.ParallelOutboundMigrationsPerNode = ptr.To[uint32](3)
	p = decide([]*v1.VirtualMachineInstance{marked("a", "node-a"), marked("b", "node-a"), marked("c", "node-a")}, nil, &cfg, nil, now)
	assert.Equal(t, []string{"a", "b", "c"}, names(p.migrate))
}

// TestSync creates KubeVirt's evacuation migrations and does not create them twice while the
// cache lags.
func TestSync(t *testing.T) {
	vmis := []runtime.Object{marked("a", "node-a"), marked("b", "node-a"), marked("c", "node-a")}
	kv := kvfake.NewSimpleClientset(vmis...)
	testutil.GenerateNames(kv)
	factory := kvinformers.NewSharedInformerFactory(kv, 0)
	vmiInformer, migrationInformer := factory.Kubevirt().V1().VirtualMachineInstances(), factory.Kubevirt().V1().VirtualMachineInstanceMigrations()
	recorder := record.NewFakeRecorder(10)
	c, err := New(kv, vmiInformer, migrationInformer, clusterconfig.NewStore(clusterconfig.Defaults()), recorder)
	require.NoError(t, err)
	c.now = func() time.Time { return now }
	for _, o := range vmis {
		require.NoError(t, vmiInformer.Informer().GetIndexer().Add(o))
	}

	require.NoError(t, c.sync(context.Background()))
	list, err := kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2, "two per node")
	for _, m := range list.Items {
		assert.Regexp(t, "^kubevirt-evacuation-", m.Name)
		assert.Equal(t, "node-a", m.Annotations[v1.EvacuationMigrationAnnotation])
	}
	assert.ElementsMatch(t, []string{"a", "b"}, []string{list.Items[0].Spec.VMIName, list.Items[1].Spec.VMIName})
	assert.Len(t, recorder.Events, 2)

	// The cache has not seen them: a second sync creates nothing.
	require.NoError(t, c.sync(context.Background()))
	list, err = kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 2)

	// Once seen and succeeded (a and b run on node-b now), c gets its turn.
	for i := range list.Items {
		m := list.Items[i]
		m.CreationTimestamp = metav1.NewTime(now)
		m.Status.Phase = v1.MigrationSucceeded
		require.NoError(t, migrationInformer.Informer().GetIndexer().Add(&m))
		moved := marked(m.Spec.VMIName, "node-b", func(v *v1.VirtualMachineInstance) { v.Status.EvacuationNodeName = "node-a" })
		require.NoError(t, vmiInformer.Informer().GetIndexer().Update(moved))
	}
	require.NoError(t, c.sync(context.Background()))
	list, err = kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 3)
	var vmisMigrated []string
	for _, m := range list.Items {
		vmisMigrated = append(vmisMigrated, m.Spec.VMIName)
	}
	assert.ElementsMatch(t, []string{"a", "b", "c"}, vmisMigrated)
}
