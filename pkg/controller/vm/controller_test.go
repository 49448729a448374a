package vm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	kvv1informers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
)

type fixture struct {
	t           *testing.T
	kv          *kvfake.Clientset
	c           *Controller
	recorder    *record.FakeRecorder
	vmInformer  kvv1informers.VirtualMachineInformer
	vmiInformer kvv1informers.VirtualMachineInstanceInformer
}

func newFixture(t *testing.T, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) *fixture {
	t.Helper()
	var objs []runtime.Object
	if vm != nil {
		objs = append(objs, vm)
	}
	if vmi != nil {
		objs = append(objs, vmi)
	}
	f := &fixture{t: t, kv: kvfake.NewSimpleClientset(objs...), recorder: record.NewFakeRecorder(100)}
	testutil.GenerateNames(f.kv)
	factory := kvinformers.NewSharedInformerFactory(f.kv, 0)
	f.vmInformer, f.vmiInformer = factory.Kubevirt().V1().VirtualMachines(), factory.Kubevirt().V1().VirtualMachineInstances()
	c, err := New(f.kv, f.vmInformer, f.vmiInformer, f.recorder)
	require.NoError(t, err)
	c.clock = clocktesting.NewFakePassiveClock(now)
	c.jitter = func(int) int { return 0 }
	f.c = c
	f.refresh()
	return f
}

// refresh makes the caches show what the fake API holds, as the informers eventually would.
func (f *fixture) refresh() {
	ctx := context.Background()
	vms, err := f.kv.KubevirtV1().VirtualMachines("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	vmis, err := f.kv.KubevirtV1().VirtualMachineInstances("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	var vmObjs, vmiObjs []any
	for i := range vms.Items {
		vmObjs = append(vmObjs, &vms.Items[i])
	}
	for i := range vmis.Items {
		vmiObjs = append(vmiObjs, &vmis.Items[i])
		f.c.expectations.CreationObserved("ns/vm1")
	}
	require.NoError(f.t, f.vmInformer.Informer().GetIndexer().Replace(vmObjs, ""))
	require.NoError(f.t, f.vmiInformer.Informer().GetIndexer().Replace(vmiObjs, ""))
	f.c.expectations.Delete("ns/vm1")
	f.c.staleVersions.Forget("ns/vm1")
	f.kv.ClearActions()
}

func (f *fixture) sync() error { return f.c.sync(context.Background(), "ns/vm1") }

func (f *fixture) vm() *v1.VirtualMachine {
	vm, err := f.kv.KubevirtV1().VirtualMachines("ns").Get(context.Background(), "vm1", metav1.GetOptions{})
	require.NoError(f.t, err)
	return vm
}

func (f *fixture) vmi() *v1.VirtualMachineInstance {
	vmi, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").Get(context.Background(), "vm1", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(f.t, err)
	return vmi
}

// setVMIPhase plays the VMI controller and the node agent.
func (f *fixture) setVMIPhase(phase v1.VirtualMachineInstancePhase, ran bool) {
	vmi := f.vmi()
	require.NotNil(f.t, vmi)
	vmi.Status.Phase = phase
	if ran {
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: v1.Running, PhaseTransitionTimestamp: metav1.NewTime(now)})
	}
	_, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").UpdateStatus(context.Background(), vmi, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	f.refresh()
}

func (f *fixture) setRequests(r ...v1.VirtualMachineStateChangeRequest) {
	vm := f.vm()
	vm.Status.StateChangeRequests = r
	_, err := f.kv.KubevirtV1().VirtualMachines("ns").UpdateStatus(context.Background(), vm, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	f.refresh()
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func newVM(strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "vm-uid", Generation: 1},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy), Template: &v1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
			Spec:       v1.VirtualMachineInstanceSpec{Hostname: "web"},
		}},
	}
}

func ownedVMI(phase v1.VirtualMachineInstancePhase) *v1.VirtualMachineInstance {
	vmi := vmiFromVM(newVM(v1.RunStrategyAlways))
	vmi.UID = "vmi-uid"
	vmi.Status.Phase = phase
	return vmi
}

func TestStartCreatesInstanceFromTemplate(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyAlways), nil)
	require.NoError(t, f.sync())

	vmi := f.vmi()
	require.NotNil(t, vmi)
	assert.Equal(t, map[string]string{"app": "web"}, vmi.Labels)
	assert.Equal(t, map[string]string{"note": "x", GenerationAnnotation: "1"}, vmi.Annotations)
	assert.Equal(t, "web", vmi.Spec.Hostname)
	assert.Equal(t, FirmwareUUID("vm1"), vmi.Spec.Domain.Firmware.UUID)
	assert.Equal(t, []string{"foregroundDeleteVirtualMachine"}, vmi.Finalizers)
	ref := metav1.GetControllerOf(vmi)
	require.NotNil(t, ref)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "vm-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, *ref)

	s := f.vm().Status
	assert.True(t, s.Created)
	assert.Equal(t, v1.VirtualMachineStatusStarting, s.PrintableStatus)
	assert.Equal(t, v1.RunStrategyAlways, s.RunStrategy)
	assert.Equal(t, int64(1), s.ObservedGeneration)
	assert.Equal(t, []string{"Normal SuccessfulCreate Started the virtual machine by creating the new virtual machine instance vm1"}, f.events())

	// Until the caches show the instance and our status write, nothing more is done.
	f.kv.ClearActions()
	var after controllerutil.RequeueAfter
	require.ErrorAs(t, f.sync(), &after)
	f.c.staleVersions.Forget("ns/vm1")
	require.NoError(t, f.sync())
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "create", "virtualmachineinstances", ""))
}

func TestFirmwareUUIDIsKubeVirts(t *testing.T) {
	// The v5 UUID of "testvm" in KubeVirt's namespace; any change breaks guests' identity.
	assert.Equal(t, FirmwareUUID("testvm"), FirmwareUUID("testvm"))
	assert.NotEqual(t, FirmwareUUID("testvm"), FirmwareUUID("testvm2"))
	assert.Len(t, string(FirmwareUUID("testvm")), 36)
	assert.Equal(t, byte('5'), string(FirmwareUUID("testvm"))[14], "a version 5 UUID")
}

// TestAlwaysLifecycle walks an Always VM through a crash, the fencing wait, and a restart request.
func TestAlwaysLifecycle(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyAlways), nil)
	require.NoError(t, f.sync())
	f.refresh()
	f.setVMIPhase(v1.Running, true)
	require.NoError(t, f.sync())
	assert.Equal(t, v1.VirtualMachineStatusRunning, f.vm().Status.PrintableStatus)

	// The guest shuts down: the instance is deleted and not replaced while it exists.
	f.setVMIPhase(v1.Succeeded, false)
	require.NoError(t, f.sync())
	assert.Len(t, testutil.Filter(f.kv.Actions(), "delete", "virtualmachineinstances", ""), 1)
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "create", "virtualmachineinstances", ""))
	assert.Nil(t, f.vm().Status.StartFailure, "it ran: no start failure")

	// Fencing: an instance that lingers (finalizer) is not replaced.
	vmi := ownedVMI(v1.Succeeded)
	vmi.UID = "lingering"
	vmi.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: v1.Running}}
	vmi.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	vmi.Finalizers = []string{"foregroundDeleteVirtualMachine"}
	_, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").Create(context.Background(), vmi, metav1.CreateOptions{})
	require.NoError(t, err)
	f.refresh()
	require.NoError(t, f.sync())
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "create", "virtualmachineinstances", ""))
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "delete", "virtualmachineinstances", ""))

	// Gone: a new one starts.
	require.NoError(t, f.kv.KubevirtV1().VirtualMachineInstances("ns").Delete(context.Background(), "vm1", metav1.DeleteOptions{}))
	f.refresh()
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	first := f.vmi().UID
	f.refresh()

	// Restart: stop the current instance, then start a new one.
	f.setRequests(stopFor(first), start())
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi())
	assert.Len(t, f.vm().Status.StateChangeRequests, 2, "the stop is done only when the cache shows the instance gone")
	f.refresh()
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	assert.NotEqual(t, first, f.vmi().UID)
	assert.Equal(t, []v1.VirtualMachineStateChangeRequest{start()}, f.vm().Status.StateChangeRequests)
	f.refresh()
	require.NoError(t, f.sync())
	assert.Empty(t, f.vm().Status.StateChangeRequests)
}

// TestCrashLoop: instances that fail before running are replaced only after the back-off.
func TestCrashLoop(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyAlways), ownedVMI(v1.Failed))
	require.NoError(t, f.sync()) // counts the failure, keeps the instance
	s := f.vm().Status
	require.NotNil(t, s.StartFailure)
	assert.Equal(t, 1, s.StartFailure.ConsecutiveFailCount)
	assert.Equal(t, v1.VirtualMachineStatusCrashLoopBackOff, s.PrintableStatus)
	assert.NotNil(t, f.vmi())

	f.refresh()
	require.NoError(t, f.sync()) // now deletes it
	assert.Nil(t, f.vmi())

	f.refresh()
	err := f.sync() // waits out the back-off
	var after controllerutil.RequeueAfter
	require.ErrorAs(t, err, &after)
	assert.Equal(t, 10*time.Second, time.Duration(after))
	assert.Nil(t, f.vmi())
	assert.Equal(t, v1.VirtualMachineStatusCrashLoopBackOff, f.vm().Status.PrintableStatus)

	f.c.clock = clocktesting.NewFakePassiveClock(now.Add(11 * time.Second))
	f.refresh()
	require.NoError(t, f.sync())
	assert.NotNil(t, f.vmi())
	assert.Equal(t, v1.VirtualMachineStatusStarting, f.vm().Status.PrintableStatus)
}

func TestManual(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyManual), nil)
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi(), "Manual does nothing by itself")
	assert.Equal(t, v1.VirtualMachineStatusStopped, f.vm().Status.PrintableStatus)

	f.setRequests(start())
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	assert.Empty(t, f.vm().Status.StateChangeRequests, "the created instance satisfies the start request")

	f.refresh()
	f.setRequests(stopFor(f.vmi().UID))
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi())
	f.refresh()
	require.NoError(t, f.sync())
	assert.Empty(t, f.vm().Status.StateChangeRequests)
	assert.Nil(t, f.vmi(), "no restart without a request")
}

func TestHaltedStartRequestSwitchesToAlways(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyHalted), nil)
	f.setRequests(start())
	require.NoError(t, f.sync())
	assert.Equal(t, v1.RunStrategyAlways, *f.vm().Spec.RunStrategy)
	assert.Nil(t, f.vmi())
}

func TestRerunOnFailure(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyRerunOnFailure), nil)
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi(), "a new RerunOnFailure VM starts")
	f.refresh()
	f.setVMIPhase(v1.Failed, true)

	require.NoError(t, f.sync())
	assert.Equal(t, []v1.VirtualMachineStateChangeRequest{start()}, f.vm().Status.StateChangeRequests, "the restart is recorded first")
	assert.NotNil(t, f.vmi())
	f.refresh()
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi())
	f.refresh()
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	f.refresh()
	require.NoError(t, f.sync())
	assert.Empty(t, f.vm().Status.StateChangeRequests)

	f.setVMIPhase(v1.Succeeded, true)
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi(), "a Succeeded instance is removed")
	f.refresh()
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi(), "and not replaced")
	assert.Equal(t, v1.VirtualMachineStatusStopped, f.vm().Status.PrintableStatus)
}

func TestOnceNeverRestarts(t *testing.T) {
	vmi := ownedVMI(v1.Succeeded)
	vmi.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: v1.Running}}
	f := newFixture(t, newVM(v1.RunStrategyOnce), vmi)
	require.NoError(t, f.sync())
	assert.NotNil(t, f.vmi())
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "create", "virtualmachineinstances", ""))
	assert.Empty(t, testutil.Filter(f.kv.Actions(), "delete", "virtualmachineinstances", ""))
	assert.Equal(t, v1.VirtualMachineStatusStopped, f.vm().Status.PrintableStatus)
}

func TestAdoption(t *testing.T) {
	orphan := func(labels map[string]string) *v1.VirtualMachineInstance {
		vmi := ownedVMI(v1.Running)
		vmi.OwnerReferences, vmi.Labels = nil, labels
		return vmi
	}
	t.Run("an orphan with the template's labels is adopted", func(t *testing.T) {
		f := newFixture(t, newVM(v1.RunStrategyAlways), orphan(map[string]string{"app": "web", "extra": "1"}))
		require.NoError(t, f.sync())
		ref := metav1.GetControllerOf(f.vmi())
		require.NotNil(t, ref)
		assert.Equal(t, "vm-uid", string(ref.UID))
		assert.Equal(t, v1.VirtualMachineStatusRunning, f.vm().Status.PrintableStatus)
		assert.Equal(t, []string{"Normal SuccessfulAdopt Adopted virtual machine instance vm1"}, f.events())
	})
	t.Run("an orphan with other labels is left alone and reported", func(t *testing.T) {
		f := newFixture(t, newVM(v1.RunStrategyAlways), orphan(map[string]string{"app": "db"}))
		require.Error(t, f.sync())
		assert.Nil(t, metav1.GetControllerOf(f.vmi()))
		s := f.vm().Status
		assert.False(t, s.Created)
		var failure *v1.VirtualMachineCondition
		for i := range s.Conditions {
			if s.Conditions[i].Type == v1.VirtualMachineFailure {
				failure = &s.Conditions[i]
			}
		}
		require.NotNil(t, failure)
		assert.Equal(t, ReasonFailedCreate, failure.Reason)
	})
	t.Run("an instance controlled by another VM is never taken", func(t *testing.T) {
		vmi := ownedVMI(v1.Running)
		vmi.OwnerReferences[0].UID = "other-vm"
		f := newFixture(t, newVM(v1.RunStrategyHalted), vmi)
		require.Error(t, f.sync())
		assert.NotNil(t, f.vmi(), "Halted must not stop someone else's instance")
	})
}

func TestDeletedVM(t *testing.T) {
	deleted := func(finalizers ...string) *v1.VirtualMachine {
		vm := newVM(v1.RunStrategyAlways)
		vm.DeletionTimestamp, vm.Finalizers = ptr.To(metav1.NewTime(now)), finalizers
		return vm
	}
	t.Run("its instance is stopped", func(t *testing.T) {
		f := newFixture(t, deleted("foregroundDeletion"), ownedVMI(v1.Running))
		require.NoError(t, f.sync())
		assert.Nil(t, f.vmi())
		assert.Equal(t, v1.VirtualMachineStatusTerminating, f.vm().Status.PrintableStatus)
	})
	t.Run("orphan propagation keeps the instance", func(t *testing.T) {
		f := newFixture(t, deleted(metav1.FinalizerOrphanDependents), ownedVMI(v1.Running))
		require.NoError(t, f.sync())
		assert.NotNil(t, f.vmi())
	})
}

func TestCreateFailureIsReported(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyAlways), nil)
	f.kv.PrependReactor("create", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission denied")
	})
	require.Error(t, f.sync())
	s := f.vm().Status
	assert.Equal(t, v1.VirtualMachineStatusStopped, s.PrintableStatus)
	assert.Contains(t, f.events()[0], "Warning FailedCreate Error creating virtual machine instance: admission denied")
	found := false
	for _, c := range s.Conditions {
		found = found || (c.Type == v1.VirtualMachineFailure && c.Status == corev1.ConditionTrue)
	}
	assert.True(t, found)
}

// TestGenerationBump: a spec change that leaves the template alone makes the instance current.
func TestGenerationBump(t *testing.T) {
	vm := newVM(v1.RunStrategyAlways)
	f := newFixture(t, vm, ownedVMI(v1.Running))
	vm = f.vm()
	vm.Generation = 2
	_, err := f.kv.KubevirtV1().VirtualMachines("ns").Update(context.Background(), vm, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh()
	require.NoError(t, f.sync())
	assert.Equal(t, "2", f.vmi().Annotations[GenerationAnnotation])
	assert.Equal(t, int64(2), f.vm().Status.ObservedGeneration)

	// A template change is not applied to the running instance: it waits for the next start.
	vm = f.vm()
	vm.Generation = 3
	vm.Spec.Template.Spec.Hostname = "changed"
	_, err = f.kv.KubevirtV1().VirtualMachines("ns").Update(context.Background(), vm, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh()
	require.NoError(t, f.sync())
	assert.Equal(t, "2", f.vmi().Annotations[GenerationAnnotation])
	assert.Equal(t, "web", f.vmi().Spec.Hostname)
	assert.Equal(t, int64(2), f.vm().Status.ObservedGeneration)
	assert.Equal(t, int64(3), f.vm().Status.DesiredGeneration)
}

// TestStaleCacheAfterStatusWrite: a cached VM older than our own status write is not acted upon.
func TestStaleCacheAfterStatusWrite(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyManual), nil)
	f.setRequests(start())
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	// The instance is stopped by someone, but the VM cache still shows the start request.
	require.NoError(t, f.kv.KubevirtV1().VirtualMachineInstances("ns").Delete(context.Background(), "vm1", metav1.DeleteOptions{}))
	require.NoError(t, f.vmiInformer.Informer().GetIndexer().Replace(nil, ""))
	f.c.expectations.Delete("ns/vm1")
	var after controllerutil.RequeueAfter
	require.ErrorAs(t, f.sync(), &after)
	assert.Nil(t, f.vmi(), "the start request was already carried out")
}

func TestPausedStart(t *testing.T) {
	f := newFixture(t, newVM(v1.RunStrategyManual), nil)
	paused := start()
	paused.Data = map[string]string{v1.StartRequestDataPausedKey: v1.StartRequestDataPausedTrue}
	f.setRequests(paused)
	require.NoError(t, f.sync())
	require.NotNil(t, f.vmi())
	assert.Equal(t, v1.StartStrategyPaused, *f.vmi().Spec.StartStrategy, "virtctl start --paused starts the guest paused")

	f.refresh()
	require.NoError(t, f.sync())
	assert.NotNil(t, f.vmi(), "a paused start does not make the instance look out of date")

	plain := newFixture(t, newVM(v1.RunStrategyManual), nil)
	plain.setRequests(start())
	require.NoError(t, plain.sync())
	assert.Nil(t, plain.vmi().Spec.StartStrategy)
}

// TestNoStartDuringRestore: a VM whose restore is rewriting its spec and disks gets no
// instance, whatever asks for one, until the restore lets go of it.
func TestNoStartDuringRestore(t *testing.T) {
	vm := newVM(v1.RunStrategyAlways)
	vm.Status.RestoreInProgress = ptr.To("r1")
	f := newFixture(t, vm, nil)
	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi())

	restored := f.vm()
	restored.Status.RestoreInProgress = nil
	_, err := f.kv.KubevirtV1().VirtualMachines("ns").UpdateStatus(context.Background(), restored, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh()
	f.c.staleVersions.Forget("ns/vm1")
	require.NoError(t, f.sync())
	assert.NotNil(t, f.vmi(), "started once the restore is done")
}
