package handler

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// fakeLauncher serves the launcher protocol on <dir>/launcher.sock with a state the test sets.
type fakeLauncher struct {
	uid     types.UID
	mu      sync.Mutex
	state   api.State
	changed chan struct{}
	synced  []*v1.VirtualMachineInstance
	calls   []string
	graces  []*int64 // of the Shutdown calls
	srv     *http.Server
}

func startFakeLauncher(t *testing.T, dir string, uid types.UID, initial api.State) *fakeLauncher {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	initial.UID = string(uid)
	f := &fakeLauncher{uid: uid, state: initial, changed: make(chan struct{})}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter) { _ = json.NewEncoder(w).Encode(f.get()) }
	mux.HandleFunc("GET "+api.PathState, func(w http.ResponseWriter, r *http.Request) { reply(w) })
	mux.HandleFunc("PUT "+api.PathSync, func(w http.ResponseWriter, r *http.Request) {
		var req api.SyncRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.synced = append(f.synced, req.VMI)
		f.mu.Unlock()
		f.set(api.State{Phase: api.PhaseRunning, Interfaces: []api.Interface{{Name: "default", MAC: "52:54:00:01:02:03", IP: "10.217.0.5", GuestIP: "10.0.2.2", PodInterfaceName: "eth0"}}})
		reply(w)
	})
	mux.HandleFunc("POST "+api.PathShutdown, func(w http.ResponseWriter, r *http.Request) {
		var req api.ShutdownRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.calls = append(f.calls, "shutdown")
		f.graces = append(f.graces, req.GracePeriodSeconds)
		f.mu.Unlock()
		reply(w)
	})
	mux.HandleFunc("GET "+api.PathStats, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Stats{UID: string(f.uid), CPUTimeNanoseconds: ptr.To[uint64](3e9),
			Interfaces: []api.InterfaceStats{{Name: "default", RxBytes: 100}}})
	})
	mux.HandleFunc("GET "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
		}
		_ = json.NewEncoder(w).Encode(api.Events{State: f.get()})
	})
	ln := listenUnix(t, filepath.Join(dir, api.SocketName))
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(ln) }()
	t.Cleanup(func() { _ = f.srv.Close() })
	return f
}

func (f *fakeLauncher) get() api.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

func (f *fakeLauncher) set(s api.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Seq = f.state.Seq + 1
	s.UID = string(f.uid)
	f.state = s
	close(f.changed)
	f.changed = make(chan struct{})
}

func scheduledVMI(uid string) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: types.UID("uid-" + uid)},
		Spec: v1.VirtualMachineInstanceSpec{
			Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
			Volumes: []v1.Volume{{Name: "ci", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{
				UserDataSecretRef: &corev1.LocalObjectReference{Name: "ud"},
			}}}},
		},
		Status: v1.VirtualMachineInstanceStatus{NodeName: "node-a", Phase: v1.Scheduled, ActivePods: map[types.UID]string{testPodUID(uid): "node-a"}},
	}
	v1.DefaultVirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	c      *Controller
	pods   *testPods
	cancel context.CancelFunc
}

// newFixture runs a controller for node-a with vmi, whose launcher pod is podUID.
func newFixture(t *testing.T, vmi *v1.VirtualMachineInstance) *fixture {
	client := fake.NewClientset(vmi)
	pods := newTestPods(t)
	c := NewController(Config{NodeName: "node-a", Pods: pods.root}, client)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Run(ctx, 1) }()
	t.Cleanup(cancel)
	return &fixture{t: t, client: client, c: c, pods: pods, cancel: cancel}
}

func (f *fixture) waitVMI(cond func(*v1.VirtualMachineInstance) bool) *v1.VirtualMachineInstance {
	f.t.Helper()
	var got *v1.VirtualMachineInstance
	require.Eventually(f.t, func() bool {
		v, err := f.client.KubevirtV1().VirtualMachineInstances("ns").Get(context.Background(), "guest", metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = v
		return cond(v)
	}, 10*time.Second, 20*time.Millisecond)
	return got
}

func condition(v *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == t {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

func TestHandlerSyncsLauncherAndReportsLifecycle(t *testing.T) {
	vmi := scheduledVMI("1")
	// What virt-controller wrote while its cache had the launcher pod not ready yet.
	podNotReady := v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: "PodNotReady"}
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{podNotReady}
	f := newFixture(t, vmi)
	fl := startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{})

	got := f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	require.Len(t, got.Status.Interfaces, 1)
	assert.Equal(t, v1.VirtualMachineInstanceNetworkInterface{
		Name: "default", MAC: "52:54:00:01:02:03", IP: "10.217.0.5", IPs: []string{"10.217.0.5"}, PodInterfaceName: "eth0", InfoSource: "domain",
	}, got.Status.Interfaces[0])
	// Ready of a running guest is virt-controller's (the launcher pod's readiness): had the
	// handler an opinion too, each would undo the other's write until the pod is ready.
	assert.Equal(t, &podNotReady, condition(got, v1.VirtualMachineInstanceReady))

	// The launcher gets the instance as it is: it reads the Secret from its pod's volume; the
	// handler reads no Secret at all.
	fl.mu.Lock()
	require.Len(t, fl.synced, 1)
	src := fl.synced[0].Spec.Volumes[0].CloudInitNoCloud
	fl.mu.Unlock()
	assert.Equal(t, &corev1.LocalObjectReference{Name: "ud"}, src.UserDataSecretRef)
	assert.Empty(t, src.UserData)

	fl.set(api.State{Phase: api.PhasePaused, Reason: "PausedByUser", Interfaces: fl.get().Interfaces})
	got = f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return condition(v, v1.VirtualMachineInstancePaused) != nil })
	assert.Equal(t, ReasonPausedByUser, condition(got, v1.VirtualMachineInstancePaused).Reason)

	fl.set(api.State{Phase: api.PhaseRunning, Interfaces: fl.get().Interfaces})
	f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return condition(v, v1.VirtualMachineInstancePaused) == nil })

	fl.set(api.State{Phase: api.PhaseFailed, Reason: "QEMUCrashed"})
	got = f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Failed })
	assert.Equal(t, "QEMUCrashed", got.Status.Reason)
	assert.Equal(t, corev1.ConditionFalse, condition(got, v1.VirtualMachineInstanceReady).Status)
	phases := []v1.VirtualMachineInstancePhase{}
	for _, p := range got.Status.PhaseTransitionTimestamps {
		phases = append(phases, p.Phase)
	}
	assert.Equal(t, []v1.VirtualMachineInstancePhase{v1.Running, v1.Failed}, phases)

	// The socket directory is the pod's volume, the kubelet's to remove: the handler
	// removes nothing there, whatever it holds.
	require.NoError(t, fl.srv.Close())
	time.Sleep(300 * time.Millisecond)
	assert.DirExists(t, f.pods.socketDir(vmi))
}

func TestRestartedHandlerDoesNotResyncARunningGuest(t *testing.T) {
	vmi := scheduledVMI("2")
	vmi.Status.Phase = v1.Running
	f := newFixture(t, vmi)
	fl := startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{Phase: api.PhaseRunning, Seq: 7,
		Interfaces: []api.Interface{{Name: "default", MAC: "52:54:00:01:02:03", IP: "10.217.0.5", PodInterfaceName: "eth0"}}})

	// The handler reports what the launcher says (the interfaces) without a new sync.
	got := f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return len(v.Status.Interfaces) == 1 })
	assert.Equal(t, v1.Running, got.Status.Phase)
	fl.mu.Lock()
	assert.Empty(t, fl.synced, "a running guest is not synced again")
	fl.mu.Unlock()

	fl.set(api.State{Phase: api.PhaseSucceeded, Reason: "GuestShutdown"})
	got = f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Succeeded })
	assert.Equal(t, "GuestShutdown", got.Status.Reason)
}

func TestDeletedInstanceShutsGuestDown(t *testing.T) {
	vmi := scheduledVMI("3")
	f := newFixture(t, vmi)
	fl := startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{})
	f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })

	require.NoError(t, f.client.KubevirtV1().VirtualMachineInstances("ns").Delete(context.Background(), "guest", metav1.DeleteOptions{}))
	assert.Eventually(t, func() bool {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		return len(fl.calls) == 1 && fl.calls[0] == "shutdown"
	}, 10*time.Second, 20*time.Millisecond)
}

// TestDeletingInstanceShutsGuestDownWithItsGracePeriod: an instance held by its finalizer
// after a delete has deletionGracePeriodSeconds 0 (no graceful deletion for instances); the
// guest gets the spec's terminationGracePeriodSeconds instead, again when a stop shortens it.
func TestDeletingInstanceShutsGuestDownWithItsGracePeriod(t *testing.T) {
	vmi := scheduledVMI("5")
	vmi.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	f := newFixture(t, vmi)
	fl := startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{})
	f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })

	steps := []struct {
		name  string
		grace int64 // the instance's terminationGracePeriodSeconds
		want  []int64
	}{
		{name: "deleted", grace: 45, want: []int64{45}},
		{name: "resynced unchanged", grace: 45, want: []int64{45}},
		{name: "stop shortens the grace period", grace: 0, want: []int64{45, 0}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			vmis := f.client.KubevirtV1().VirtualMachineInstances("ns")
			v, err := vmis.Get(context.Background(), "guest", metav1.GetOptions{})
			require.NoError(t, err)
			v.DeletionTimestamp = ptr.To(metav1.Now())
			v.DeletionGracePeriodSeconds = ptr.To[int64](0)
			v.Spec.TerminationGracePeriodSeconds = ptr.To(step.grace)
			v.Labels = map[string]string{"step": step.name} // an update event even when unchanged
			_, err = vmis.Update(context.Background(), v, metav1.UpdateOptions{})
			require.NoError(t, err)
			time.Sleep(300 * time.Millisecond) // time for a wrong extra call to show
			sent := func() []int64 {
				fl.mu.Lock()
				defer fl.mu.Unlock()
				var got []int64
				for _, g := range fl.graces {
					got = append(got, ptr.Deref(g, -1)) // -1: none, the launcher's own
				}
				return got
			}
			assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(step.want, sent()) }, 10*time.Second, 20*time.Millisecond)
			assert.Equal(t, step.want, sent(), "grace periods sent")
		})
	}
}

func TestNextStatusNeverLeavesFinal(t *testing.T) {
	vmi := scheduledVMI("4")
	vmi.Status.Phase = v1.Succeeded
	s := nextStatus(vmi, api.State{Phase: api.PhaseRunning}, metav1.Now())
	assert.Equal(t, v1.Succeeded, s.Phase)
}

// A source launcher whose guest left reports Succeeded (Migrated), maybe before it reports
// the migration's end: the instance runs on (on the target), and the migration completed.
func TestNextStatusOfAMigratedSource(t *testing.T) {
	vmi := scheduledVMI("5")
	vmi.Status.Phase = v1.Running
	vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUid: "m-1", SourceNode: vmi.Status.NodeName, TargetNode: "node-b"}
	for name, m := range map[string]*api.Migration{
		"end not reported yet": {UID: "m-1", Role: api.MigrationSource},
		"end reported":         {UID: "m-1", Role: api.MigrationSource, Completed: true, EndedAt: ptr.To(time.Now())},
	} {
		t.Run(name, func(t *testing.T) {
			s := nextStatus(vmi, api.State{Phase: api.PhaseSucceeded, Reason: "Migrated", Migration: m}, metav1.Now())
			assert.Equal(t, v1.Running, s.Phase, "the guest runs on the target")
			assert.Equal(t, m.Completed, s.MigrationState.Completed)
			assert.False(t, s.MigrationState.Failed)
		})
	}
}
