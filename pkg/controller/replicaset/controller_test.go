package replicaset

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
)

func newRS(replicas int32, mutate ...func(*v1.VirtualMachineInstanceReplicaSet)) *v1.VirtualMachineInstanceReplicaSet {
	rs := &v1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid"},
		Spec: v1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &v1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       v1.VirtualMachineInstanceSpec{Hostname: "h"},
			},
		},
	}
	for _, m := range mutate {
		m(rs)
	}
	return rs
}

type vmiOpt func(*v1.VirtualMachineInstance)

func owned(vmi *v1.VirtualMachineInstance) {
	vmi.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(newRS(0), rsKind)}
}
func onNode(vmi *v1.VirtualMachineInstance) { vmi.Status.NodeName = "node-a" }
func ready(vmi *v1.VirtualMachineInstance) {
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}}
}
func phase(p v1.VirtualMachineInstancePhase) vmiOpt {
	return func(vmi *v1.VirtualMachineInstance) { vmi.Status.Phase = p }
}
func age(d time.Duration) vmiOpt {
	return func(vmi *v1.VirtualMachineInstance) { vmi.CreationTimestamp = metav1.NewTime(time.Now().Add(-d)) }
}
func labelled(l map[string]string) vmiOpt {
	return func(vmi *v1.VirtualMachineInstance) { vmi.Labels = l }
}

func newVMI(name string, opts ...vmiOpt) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
	vmi.Status.Phase = v1.Running
	for _, o := range opts {
		o(vmi)
	}
	return vmi
}

type fixture struct {
	t         *testing.T
	kv        *kvfake.Clientset
	c         *Controller
	recorder  *record.FakeRecorder
	rsIndexer cache.Indexer
}

func newFixture(t *testing.T, rs *v1.VirtualMachineInstanceReplicaSet, vmis ...*v1.VirtualMachineInstance) *fixture {
	t.Helper()
	objs := []runtime.Object{rs}
	for _, v := range vmis {
		objs = append(objs, v)
	}
	f := &fixture{t: t, kv: kvfake.NewSimpleClientset(objs...), recorder: record.NewFakeRecorder(1000)}
	testutil.GenerateNames(f.kv)
	factory := kvinformers.NewSharedInformerFactory(f.kv, 0)
	rsInformer, vmiInformer := factory.Kubevirt().V1().VirtualMachineInstanceReplicaSets(), factory.Kubevirt().V1().VirtualMachineInstances()
	c, err := New(f.kv, rsInformer, vmiInformer, f.recorder)
	require.NoError(t, err)
	require.NoError(t, rsInformer.Informer().GetIndexer().Add(rs))
	for _, v := range vmis {
		require.NoError(t, vmiInformer.Informer().GetIndexer().Add(v))
	}
	f.c, f.rsIndexer = c, rsInformer.Informer().GetIndexer()
	f.kv.ClearActions()
	return f
}

func (f *fixture) rs() *v1.VirtualMachineInstanceReplicaSet {
	rs, err := f.kv.KubevirtV1().VirtualMachineInstanceReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(f.t, err)
	return rs
}

func (f *fixture) deleted() []string {
	var out []string
	for _, a := range testutil.Filter(f.kv.Actions(), "delete", "virtualmachineinstances", "") {
		out = append(out, a.(k8stesting.DeleteActionImpl).Name)
	}
	sort.Strings(out)
	return out
}

func (f *fixture) created() []*v1.VirtualMachineInstance {
	var out []*v1.VirtualMachineInstance
	for _, a := range testutil.Filter(f.kv.Actions(), "create", "virtualmachineinstances", "") {
		out = append(out, a.(k8stesting.CreateActionImpl).Object.(*v1.VirtualMachineInstance))
	}
	return out
}

func (f *fixture) condition(t v1.VirtualMachineInstanceReplicaSetConditionType) *v1.VirtualMachineInstanceReplicaSetCondition {
	for _, c := range f.rs().Status.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

func TestSync(t *testing.T) {
	tests := []struct {
		name         string
		rs           *v1.VirtualMachineInstanceReplicaSet
		vmis         []*v1.VirtualMachineInstance
		wantCreated  int
		wantDeleted  []string
		wantReplicas int32
		wantReady    int32
		wantPatched  []string
	}{
		{name: "scale up from zero", rs: newRS(3), wantCreated: 3},
		{name: "nil replicas means one", rs: newRS(0, func(rs *v1.VirtualMachineInstanceReplicaSet) { rs.Spec.Replicas = nil }), wantCreated: 1},
		{
			name:         "at size: nothing to do",
			rs:           newRS(2),
			vmis:         []*v1.VirtualMachineInstance{newVMI("a", owned, onNode, ready), newVMI("b", owned, onNode)},
			wantReplicas: 2, wantReady: 1,
		},
		{
			name: "scale down removes unscheduled, then unready, then the youngest",
			rs:   newRS(1),
			vmis: []*v1.VirtualMachineInstance{
				newVMI("old-ready", owned, onNode, ready, age(3*time.Hour)),
				newVMI("young-ready", owned, onNode, ready, age(time.Hour)),
				newVMI("unready", owned, onNode, age(5*time.Hour)),
				newVMI("unscheduled", owned, phase(v1.Scheduling), age(6*time.Hour)),
			},
			wantDeleted:  []string{"unready", "unscheduled", "young-ready"},
			wantReplicas: 4, wantReady: 2,
		},
		{
			name:         "paused: no scaling",
			rs:           newRS(3, func(rs *v1.VirtualMachineInstanceReplicaSet) { rs.Spec.Paused = true }),
			vmis:         []*v1.VirtualMachineInstance{newVMI("a", owned)},
			wantReplicas: 1,
		},
		{
			name:         "finished instances are replaced",
			rs:           newRS(2),
			vmis:         []*v1.VirtualMachineInstance{newVMI("done", owned, phase(v1.Succeeded)), newVMI("crashed", owned, phase(v1.Failed)), newVMI("ok", owned)},
			wantCreated:  1,
			wantDeleted:  []string{"crashed", "done"},
			wantReplicas: 1,
		},
		{
			name:         "instances being deleted do not count",
			rs:           newRS(1),
			vmis:         []*v1.VirtualMachineInstance{newVMI("going", owned, func(v *v1.VirtualMachineInstance) { v.DeletionTimestamp = ptr.To(metav1.Now()) })},
			wantCreated:  1,
			wantReplicas: 0,
		},
		{
			name:         "a matching orphan is adopted and counts",
			rs:           newRS(1),
			vmis:         []*v1.VirtualMachineInstance{newVMI("orphan")},
			wantPatched:  []string{"orphan"},
			wantReplicas: 1,
		},
		{
			name:        "an owned instance that stops matching is released and replaced",
			rs:          newRS(1),
			vmis:        []*v1.VirtualMachineInstance{newVMI("relabelled", owned, labelled(map[string]string{"app": "debug"}))},
			wantPatched: []string{"relabelled"}, wantCreated: 1,
		},
		{
			name: "another controller's instance is left alone",
			rs:   newRS(1),
			vmis: []*v1.VirtualMachineInstance{newVMI("theirs", func(v *v1.VirtualMachineInstance) {
				v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "x", UID: "x", Controller: ptr.To(true)}}
			})},
			wantCreated: 1,
		},
		{name: "other labels are not ours", rs: newRS(1), vmis: []*v1.VirtualMachineInstance{newVMI("db", labelled(map[string]string{"app": "db"}))}, wantCreated: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.rs, tt.vmis...)
			require.NoError(t, f.c.sync(context.Background(), "ns/web"))

			created := f.created()
			assert.Len(t, created, tt.wantCreated)
			for _, vmi := range created {
				assert.Equal(t, "web", vmi.GenerateName)
				assert.Equal(t, map[string]string{"app": "web", "tier": "front"}, vmi.Labels)
				assert.Equal(t, "h", vmi.Spec.Hostname)
				assert.Equal(t, []string{"foregroundDeleteVirtualMachine"}, vmi.Finalizers)
				ref := metav1.GetControllerOf(vmi)
				require.NotNil(t, ref)
				assert.Equal(t, types.UID("rs-uid"), ref.UID)
				assert.True(t, *ref.BlockOwnerDeletion)
			}
			assert.Equal(t, tt.wantDeleted, f.deleted())
			var patched []string
			for _, a := range testutil.Filter(f.kv.Actions(), "patch", "virtualmachineinstances", "") {
				patched = append(patched, a.(k8stesting.PatchActionImpl).Name)
			}
			assert.Equal(t, tt.wantPatched, patched)

			s := f.rs().Status
			assert.Equal(t, tt.wantReplicas, s.Replicas)
			assert.Equal(t, tt.wantReady, s.ReadyReplicas)
			assert.Equal(t, "app=web", s.LabelSelector)
			assert.Nil(t, f.condition(v1.VirtualMachineInstanceReplicaSetReplicaFailure))
			assert.Equal(t, tt.rs.Spec.Paused, f.condition(v1.VirtualMachineInstanceReplicaSetReplicaPaused) != nil)
		})
	}
}

func TestAdoptedInstanceIsOwned(t *testing.T) {
	f := newFixture(t, newRS(1), newVMI("orphan"))
	require.NoError(t, f.c.sync(context.Background(), "ns/web"))
	vmi, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").Get(context.Background(), "orphan", metav1.GetOptions{})
	require.NoError(t, err)
	ref := metav1.GetControllerOf(vmi)
	require.NotNil(t, ref)
	assert.Equal(t, types.UID("rs-uid"), ref.UID)
}

func TestExpectationsPreventDoubleCreate(t *testing.T) {
	f := newFixture(t, newRS(2))
	ctx := context.Background()
	require.NoError(t, f.c.sync(ctx, "ns/web"))
	require.NoError(t, f.c.sync(ctx, "ns/web")) // the cache shows none of the new instances yet
	assert.Len(t, f.created(), 2)
}

func TestBurst(t *testing.T) {
	f := newFixture(t, newRS(10))
	f.c.burst = 4
	require.NoError(t, f.c.sync(context.Background(), "ns/web"))
	assert.Len(t, f.created(), 4)
}

func TestCreateFailure(t *testing.T) {
	f := newFixture(t, newRS(5))
	var calls atomic.Int32
	var healthy atomic.Bool
	f.kv.PrependReactor("create", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) > 1 && !healthy.Load() {
			return true, nil, errors.New("quota exceeded")
		}
		return false, nil, nil
	})
	err := f.c.sync(context.Background(), "ns/web")
	require.Error(t, err)
	assert.Equal(t, int32(3), calls.Load(), "batches of 1 then 2, then stop")
	cond := f.condition(v1.VirtualMachineInstanceReplicaSetReplicaFailure)
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.Equal(t, FailedCreateReason, cond.Reason)
	adds, _ := f.c.expectations.Pending("ns/web")
	assert.Equal(t, 1, adds, "only the successful creation is still expected")

	// The failure clears once scaling works again.
	healthy.Store(true)
	f.c.expectations.Delete("ns/web")
	require.NoError(t, f.c.sync(context.Background(), "ns/web"))
	assert.Nil(t, f.condition(v1.VirtualMachineInstanceReplicaSetReplicaFailure))
}

// In a namespace whose quota leaves no room for a launcher pod, virt-api refuses every
// instance with the same 403. The set says so once (condition and event) and does not rewrite
// its status on every try: its own status write brings it back at once, and a write on each
// try would make that a loop; instead the retries are the work queue's rate-limited ones.
func TestCreateForbidden(t *testing.T) {
	f := newFixture(t, newRS(3))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: v1.GroupName, Resource: "virtualmachineinstances"}, "",
		errors.New("launcher pod: exceeded quota: q1, requested: pods=1, used: pods=0, limited: pods=0"))
	f.kv.PrependReactor("create", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden
	})
	statusWrites := func() int {
		return len(testutil.Filter(f.kv.Actions(), "update", "virtualmachineinstancereplicasets", "status"))
	}

	err := f.c.sync(context.Background(), "ns/web")
	require.True(t, apierrors.IsForbidden(err), "the error goes back to the queue, rate-limited: %v", err)
	assert.Len(t, f.created(), 1, "the first batch is one instance: it fails, the set stops")
	cond := f.condition(v1.VirtualMachineInstanceReplicaSetReplicaFailure)
	require.NotNil(t, cond)
	assert.Equal(t, FailedCreateReason, cond.Reason)
	assert.Contains(t, cond.Message, "virtualmachineinstances.kubevirt.io is forbidden: launcher pod: exceeded quota: q1")
	assert.Equal(t, "Warning FailedCreate Error creating VMI: virtualmachineinstances.kubevirt.io is forbidden: "+
		"launcher pod: exceeded quota: q1, requested: pods=1, used: pods=0, limited: pods=0", <-f.recorder.Events)
	assert.Equal(t, 1, statusWrites())

	require.NoError(t, f.rsIndexer.Update(f.rs()))
	for range 3 {
		err = f.c.sync(context.Background(), "ns/web")
		require.True(t, apierrors.IsForbidden(err), "%v", err)
	}
	assert.Equal(t, 1, statusWrites(), "the same refusal writes no new status")
	assert.Len(t, f.created(), 4, "one try per sync")
}

func TestPauseEvents(t *testing.T) {
	f := newFixture(t, newRS(1, func(rs *v1.VirtualMachineInstanceReplicaSet) { rs.Spec.Paused = true }))
	require.NoError(t, f.c.sync(context.Background(), "ns/web"))
	assert.Equal(t, "Normal SuccessfulPaused Paused", <-f.recorder.Events)
	assert.Empty(t, f.created())
}
