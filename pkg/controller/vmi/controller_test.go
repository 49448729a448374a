package vmi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

type fixture struct {
	t        *testing.T
	kv       *kvfake.Clientset
	kube     *k8sfake.Clientset
	c        *Controller
	recorder *record.FakeRecorder
	nodes    cache.Indexer
}

// newFixture seeds the clientsets and the informer caches with the same objects, as the
// informers would after a sync, and never starts the informers: each test drives sync itself.
func newFixture(t *testing.T, vmis []*v1.VirtualMachineInstance, pods []*corev1.Pod, claims ...*corev1.PersistentVolumeClaim) *fixture {
	t.Helper()
	var kvObjs, kubeObjs []runtime.Object
	for _, o := range vmis {
		kvObjs = append(kvObjs, o)
	}
	for _, o := range pods {
		kubeObjs = append(kubeObjs, o)
	}
	for _, o := range claims {
		kubeObjs = append(kubeObjs, o)
	}
	f := &fixture{t: t, kv: kvfake.NewSimpleClientset(kvObjs...), kube: k8sfake.NewSimpleClientset(kubeObjs...), recorder: record.NewFakeRecorder(100)}
	testutil.GenerateNames(f.kube)
	kvf := kvinformers.NewSharedInformerFactory(f.kv, 0)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	vmiInformer, podInformer := kvf.Kubevirt().V1().VirtualMachineInstances(), kf.Core().V1().Pods()
	pvcInformer := kf.Core().V1().PersistentVolumeClaims()
	cfg := clusterconfig.Defaults()
	cfg.UseEmulation = true
	nodeInformer := kf.Core().V1().Nodes()
	f.nodes = nodeInformer.Informer().GetIndexer()
	c, err := New(f.kv, f.kube, vmiInformer, podInformer, pvcInformer, nodeInformer, clusterconfig.NewStore(cfg), f.recorder)
	require.NoError(t, err)
	for _, o := range claims {
		require.NoError(t, pvcInformer.Informer().GetIndexer().Add(o))
	}
	for _, o := range vmis {
		require.NoError(t, vmiInformer.Informer().GetIndexer().Add(o))
	}
	for _, o := range pods {
		require.NoError(t, podInformer.Informer().GetIndexer().Add(o))
	}
	f.c = c
	f.kv.ClearActions()
	f.kube.ClearActions()
	return f
}

func (f *fixture) vmi(name string) *v1.VirtualMachineInstance {
	vmi, err := f.kv.KubevirtV1().VirtualMachineInstances("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return vmi
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

func newVMI(phase v1.VirtualMachineInstancePhase, mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "uid-1", Finalizers: []string{Finalizer},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Minute))},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}},
		Status: v1.VirtualMachineInstanceStatus{Phase: phase},
	}
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func newPod(name string, ownerUID types.UID, mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("pod-" + name),
		Labels: map[string]string{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(ownerUID)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1",
			UID: ownerUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func newClaim(name string, mode *corev1.PersistentVolumeMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: mode}}
}

// withClaims gives the instance one persistentVolumeClaim volume per claim, named vol-<claim>.
func withClaims(claims ...string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		for _, c := range claims {
			vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: "vol-" + c, VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}},
			}})
		}
	}
}

func createdPod(t *testing.T, f *fixture) corev1.Pod {
	t.Helper()
	pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	return pods.Items[0]
}

func condition(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	return vmi.Status.Condition(t)
}

func bound(node string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

// emulation is the launcher pod's useEmulation setting.
func emulation(value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "compute",
			Env: []corev1.EnvVar{{Name: layout.EnvEmulation, Value: value}}})
	}
}

func podPhase(phase corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

// notReadySince marks a pod not ready since ago.
func notReadySince(ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(time.Now().Add(-ago)),
		})
	}
}

func computeEnded(ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: layout.ComputeContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, FinishedAt: metav1.NewTime(time.Now().Add(-ago))}},
		})
	}
}

func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }

func phases(s v1.VirtualMachineInstanceStatus) []v1.VirtualMachineInstancePhase {
	var out []v1.VirtualMachineInstancePhase
	for _, ts := range s.PhaseTransitionTimestamps {
		out = append(out, ts.Phase)
	}
	return out
}

func TestSync(t *testing.T) {
	tests := []struct {
		name        string
		vmi         *v1.VirtualMachineInstance
		pods        []*corev1.Pod
		claims      []*corev1.PersistentVolumeClaim
		reactor     func(*k8sfake.Clientset)
		wantErr     bool
		wantPhase   v1.VirtualMachineInstancePhase
		wantReason  string
		wantNode    string
		wantPhases  []v1.VirtualMachineInstancePhase
		wantCreates int
		wantDeletes []string
		wantEvents  []string
		check       func(t *testing.T, f *fixture, vmi *v1.VirtualMachineInstance)
	}{
		{
			name:      "a new instance gets a finalizer and a launcher pod, and goes through Pending to Scheduling",
			vmi:       newVMI(v1.VmPhaseUnset, func(v *v1.VirtualMachineInstance) { v.Finalizers = nil }),
			wantPhase: v1.Scheduling, wantPhases: []v1.VirtualMachineInstancePhase{v1.Pending, v1.Scheduling}, wantCreates: 1,
			wantEvents: []string{"Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-"},
			check: func(t *testing.T, f *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Equal(t, []string{Finalizer}, vmi.Finalizers)
				pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
				require.NoError(t, err)
				require.Len(t, pods.Items, 1)
				assert.Equal(t, "uid-1", pods.Items[0].Labels[v1.CreatedByLabel])
				assert.Equal(t, types.UID("uid-1"), metav1.GetControllerOf(&pods.Items[0]).UID)
				ready := vmi.Status.Conditions[0]
				assert.Equal(t, v1.VirtualMachineInstanceReady, ready.Type)
				assert.Equal(t, corev1.ConditionFalse, ready.Status)
			},
		},
		{
			name: "a block claim is a device of the compute container at /dev/<volume>, a filesystem claim a mount",
			vmi:  newVMI(v1.VmPhaseUnset, withClaims("blk", "fs", "unset")),
			claims: []*corev1.PersistentVolumeClaim{newClaim("blk", ptr.To(corev1.PersistentVolumeBlock)),
				newClaim("fs", ptr.To(corev1.PersistentVolumeFilesystem)), newClaim("unset", nil)},
			wantPhase: v1.Scheduling, wantCreates: 1,
			wantEvents: []string{"Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-"},
			check: func(t *testing.T, f *fixture, vmi *v1.VirtualMachineInstance) {
				c := createdPod(t, f).Spec.Containers[0]
				assert.Equal(t, []corev1.VolumeDevice{{Name: "vol-blk", DevicePath: "/dev/vol-blk"}}, c.VolumeDevices)
				var mounts []string
				for _, m := range c.VolumeMounts {
					mounts = append(mounts, m.MountPath)
				}
				assert.Equal(t, []string{layout.SocketMountPath, layout.PrivateMountPath, layout.EphemeralMountPath, layout.FDSetDir, launcherpod.PVCMountDir + "/vol-fs", launcherpod.PVCMountDir + "/vol-unset"}, mounts)
			},
		},
		{
			name:      "a missing claim keeps the instance Pending without a pod, unschedulable and not synchronized, as KubeVirt reports it",
			vmi:       newVMI(v1.VmPhaseUnset, withClaims("here", "missing")),
			claims:    []*corev1.PersistentVolumeClaim{newClaim("here", ptr.To(corev1.PersistentVolumeBlock))},
			wantPhase: v1.Pending, wantPhases: []v1.VirtualMachineInstancePhase{v1.Pending},
			wantEvents: []string{"Normal FailedPvcNotFound PVC ns/missing does not exist, waiting for it to appear"},
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				for _, ct := range []v1.VirtualMachineInstanceConditionType{PodScheduledCondition, v1.VirtualMachineInstanceSynchronized} {
					cond := condition(vmi, ct)
					require.NotNil(t, cond, ct)
					assert.Equal(t, corev1.ConditionFalse, cond.Status, ct)
					assert.Equal(t, "PVC ns/missing does not exist, waiting for it to appear", cond.Message, ct)
				}
				assert.Equal(t, corev1.PodReasonUnschedulable, condition(vmi, PodScheduledCondition).Reason)
				assert.Equal(t, FailedPvcNotFoundReason, condition(vmi, v1.VirtualMachineInstanceSynchronized).Reason)
			},
		},
		{
			name: "a claim that appeared: the pod is created and the waiting conditions go",
			vmi: newVMI(v1.Pending, withClaims("late"), func(v *v1.VirtualMachineInstance) {
				msg := "PVC ns/late does not exist, waiting for it to appear"
				v.Status.Conditions = []v1.VirtualMachineInstanceCondition{
					{Type: PodScheduledCondition, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg},
					{Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: FailedPvcNotFoundReason, Message: msg},
				}
			}),
			claims:    []*corev1.PersistentVolumeClaim{newClaim("late", ptr.To(corev1.PersistentVolumeBlock))},
			wantPhase: v1.Scheduling, wantCreates: 1,
			wantEvents: []string{"Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-"},
			check: func(t *testing.T, f *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Nil(t, condition(vmi, PodScheduledCondition))
				assert.Nil(t, condition(vmi, v1.VirtualMachineInstanceSynchronized))
				assert.Equal(t, "/dev/vol-late", createdPod(t, f).Spec.Containers[0].VolumeDevices[0].DevicePath)
			},
		},
		{
			name: "a failed pod creation leaves the instance Pending and reports",
			vmi:  newVMI(v1.VmPhaseUnset),
			reactor: func(c *k8sfake.Clientset) {
				c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("quota exceeded")
				})
			},
			wantErr: true, wantPhase: v1.Pending, wantPhases: []v1.VirtualMachineInstancePhase{v1.Pending}, wantCreates: 1,
			wantEvents: []string{"Warning FailedCreate Error creating pod: quota exceeded"},
		},
		{
			name:      "a pod in the cache moves Pending to Scheduling",
			vmi:       newVMI(v1.Pending),
			pods:      []*corev1.Pod{newPod("p1", "uid-1")},
			wantPhase: v1.Scheduling, wantPhases: []v1.VirtualMachineInstancePhase{v1.Scheduling},
		},
		{
			name:      "a bound pod moves Scheduling to Scheduled with the node",
			vmi:       newVMI(v1.Scheduling),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"))},
			wantPhase: v1.Scheduled, wantNode: "node-a", wantPhases: []v1.VirtualMachineInstancePhase{v1.Scheduled},
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Equal(t, map[types.UID]string{"pod-p1": "node-a"}, vmi.Status.ActivePods)
			},
		},
		{
			name: "under software emulation the KVM-only features are named in FeaturesDropped",
			vmi: newVMI(v1.Scheduling, func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Relaxed: &v1.FeatureState{}}}
				v.Spec.Domain.Clock = &v1.Clock{Timer: &v1.Timer{Hyperv: &v1.HypervTimer{}}}
			}),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), emulation("true"))},
			wantPhase: v1.Scheduled, wantNode: "node-a", wantPhases: []v1.VirtualMachineInstancePhase{v1.Scheduled},
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				cond := condition(vmi, v1.VirtualMachineInstanceFeaturesDropped)
				require.NotNil(t, cond)
				assert.Equal(t, corev1.ConditionTrue, cond.Status)
				assert.Equal(t, ReasonSoftwareEmulation, cond.Reason)
				assert.Equal(t, "software emulation (useEmulation) offers no spec.domain.features.hyperv, spec.domain.clock.timer.hyperv: the guest runs without them", cond.Message)
			},
		},
		{
			name: "under KVM nothing is dropped",
			vmi: newVMI(v1.Scheduling, func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Relaxed: &v1.FeatureState{}}}
			}),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), emulation("false"))},
			wantPhase: v1.Scheduled, wantNode: "node-a", wantPhases: []v1.VirtualMachineInstancePhase{v1.Scheduled},
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Nil(t, condition(vmi, v1.VirtualMachineInstanceFeaturesDropped))
			},
		},
		{
			name:      "an unprocessed instance whose pod is already bound goes straight to Scheduled",
			vmi:       newVMI(v1.VmPhaseUnset),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"))},
			wantPhase: v1.Scheduled, wantNode: "node-a",
			wantPhases: []v1.VirtualMachineInstancePhase{v1.Pending, v1.Scheduling, v1.Scheduled},
		},
		{
			name: "an unschedulable pod shows as a PodScheduled condition",
			vmi:  newVMI(v1.Scheduling),
			pods: []*corev1.Pod{newPod("p1", "uid-1", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}
			})},
			wantPhase: v1.Scheduling,
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				var cond *v1.VirtualMachineInstanceCondition
				for i := range vmi.Status.Conditions {
					if vmi.Status.Conditions[i].Type == PodScheduledCondition {
						cond = &vmi.Status.Conditions[i]
					}
				}
				require.NotNil(t, cond)
				assert.Equal(t, corev1.ConditionFalse, cond.Status)
				assert.Equal(t, corev1.PodReasonUnschedulable, cond.Reason)
				assert.Equal(t, "0/1 nodes are available", cond.Message)
			},
		},
		{
			name:      "a pod that disappears while Scheduling fails the instance",
			vmi:       newVMI(v1.Scheduling),
			wantPhase: v1.Failed, wantReason: ReasonPodDeleted, wantPhases: []v1.VirtualMachineInstancePhase{v1.Failed},
		},
		{
			name:      "a pod being deleted while Scheduling fails the instance",
			vmi:       newVMI(v1.Scheduling),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", terminating)},
			wantPhase: v1.Failed, wantReason: ReasonPodDeleted,
		},
		{
			name:      "a pod that failed while Scheduled fails the instance",
			vmi:       newVMI(v1.Scheduled, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodFailed))},
			wantPhase: v1.Failed, wantReason: ReasonPodFailed, wantNode: "node-a",
		},
		{
			name:      "a launcher that just failed to start the guest: the node agent's reason is awaited",
			vmi:       newVMI(v1.Scheduled, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodFailed), notReadySince(time.Minute), computeEnded(time.Second))},
			wantPhase: v1.Scheduled, wantNode: "node-a",
			wantErr: true, // a requeue for when the node agent's time is up
		},
		{
			name:      "a launcher that failed long ago without the node agent's word: PodFailed",
			vmi:       newVMI(v1.Scheduled, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodFailed), notReadySince(time.Minute), computeEnded(time.Minute))},
			wantPhase: v1.Failed, wantReason: ReasonPodFailed, wantNode: "node-a",
		},
		{
			name:      "a pod that disappears while Scheduled fails the instance",
			vmi:       newVMI(v1.Scheduled, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			wantPhase: v1.Failed, wantReason: ReasonPodDeleted, wantNode: "node-a",
		},
		{
			name:      "a Running instance whose pod is gone fails",
			vmi:       newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			wantPhase: v1.Failed, wantReason: ReasonPodDeleted, wantNode: "node-a",
		},
		{
			name:      "Running belongs to the node agent: a pod that just ended waits for its report",
			vmi:       newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodFailed), notReadySince(time.Second))},
			wantPhase: v1.Running, wantNode: "node-a",
			wantErr: true, // a requeue for when the node agent's time is up
		},
		{
			name:      "a Running instance whose pod failed unreported (its node restarted) fails",
			vmi:       newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodFailed), notReadySince(time.Minute))},
			wantPhase: v1.Failed, wantReason: ReasonPodFailed, wantNode: "node-a",
		},
		{
			name:      "a Running instance whose pod completed unreported succeeds",
			vmi:       newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodSucceeded), notReadySince(time.Minute))},
			wantPhase: v1.Succeeded, wantReason: ReasonPodCompleted, wantNode: "node-a",
		},
		{
			name: "a Running instance is Ready when its launcher is",
			vmi:  newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }),
			pods: []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodRunning), func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: layout.ComputeContainer, Ready: true}}
			})},
			wantPhase: v1.Running, wantNode: "node-a",
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				ready := condition(vmi, v1.VirtualMachineInstanceReady)
				require.NotNil(t, ready)
				assert.Equal(t, corev1.ConditionTrue, ready.Status)
			},
		},
		{
			name: "a deleted instance has its pod deleted with its grace period and keeps the finalizer",
			vmi: newVMI(v1.Running, func(v *v1.VirtualMachineInstance) {
				v.DeletionTimestamp = ptr.To(metav1.Now())
				v.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7)
			}),
			pods:        []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"))},
			wantPhase:   v1.Running,
			wantDeletes: []string{"p1/7"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted virtual machine pod p1"},
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Equal(t, []string{Finalizer}, vmi.Finalizers)
			},
		},
		{
			name:      "a deleted instance whose pod is terminating waits",
			vmi:       newVMI(v1.Running, func(v *v1.VirtualMachineInstance) { v.DeletionTimestamp = ptr.To(metav1.Now()) }),
			pods:      []*corev1.Pod{newPod("p1", "uid-1", terminating)},
			wantPhase: v1.Running,
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Equal(t, []string{Finalizer}, vmi.Finalizers)
			},
		},
		{
			name:      "a final instance without pods loses the finalizer",
			vmi:       newVMI(v1.Failed),
			wantPhase: v1.Failed,
			check: func(t *testing.T, _ *fixture, vmi *v1.VirtualMachineInstance) {
				assert.Empty(t, vmi.Finalizers)
			},
		},
		{
			name:        "a final instance has its pod deleted with the default grace period",
			vmi:         newVMI(v1.Succeeded),
			pods:        []*corev1.Pod{newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodSucceeded))},
			wantPhase:   v1.Succeeded,
			wantDeletes: []string{"p1/30"},
			wantEvents:  []string{"Normal SuccessfulDelete Deleted virtual machine pod p1"},
		},
		{
			name:        "a pod left by an earlier instance of the same name is deleted, the new one gets its own",
			vmi:         newVMI(v1.VmPhaseUnset),
			pods:        []*corev1.Pod{newPod("old", "uid-0", bound("node-a"))},
			wantPhase:   v1.Scheduling,
			wantCreates: 1,
			wantDeletes: []string{"old/30"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted virtual machine pod old",
				"Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*v1.VirtualMachineInstance{tt.vmi}, tt.pods, tt.claims...)
			if tt.reactor != nil {
				tt.reactor(f.kube)
			}
			err := f.c.sync(context.Background(), "ns/vm1")
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			vmi := f.vmi("vm1")
			assert.Equal(t, tt.wantPhase, vmi.Status.Phase)
			assert.Equal(t, tt.wantReason, vmi.Status.Reason)
			assert.Equal(t, tt.wantNode, vmi.Status.NodeName)
			if tt.wantPhases != nil {
				assert.Equal(t, tt.wantPhases, phases(vmi.Status))
			}
			assert.Len(t, testutil.Filter(f.kube.Actions(), "create", "pods", ""), tt.wantCreates)
			var deletes []string
			for _, a := range testutil.Filter(f.kube.Actions(), "delete", "pods", "") {
				d := a.(k8stesting.DeleteActionImpl)
				grace := "-"
				if g := d.DeleteOptions.GracePeriodSeconds; g != nil {
					grace = time.Duration(*g * int64(time.Second)).String()
					grace = grace[:len(grace)-1]
				}
				deletes = append(deletes, d.Name+"/"+grace)
			}
			assert.Equal(t, tt.wantDeletes, deletes)
			events := f.events()
			for i := range events {
				if len(events[i]) > len("Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-") &&
					events[i][:len("Normal SuccessfulCreate")] == "Normal SuccessfulCreate" {
					events[i] = events[i][:len(events[i])-5] // the generated suffix
				}
			}
			assert.Equal(t, tt.wantEvents, events)
			if tt.check != nil {
				tt.check(t, f, vmi)
			}
		})
	}
}

// TestNoDuplicatePod: a second sync before the informer shows the new pod must not create
// another, and the observed pod satisfies the expectation.
func TestNoDuplicatePod(t *testing.T) {
	f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.VmPhaseUnset)}, nil)
	ctx := context.Background()
	require.NoError(t, f.c.sync(ctx, "ns/vm1"))
	var after controllerutil.RequeueAfter
	require.ErrorAs(t, f.c.sync(ctx, "ns/vm1"), &after, "the cache does not show our status write yet: wait for it")
	f.c.staleVersions.Forget("ns/vm1") // past that guard, the expectation still holds
	require.NoError(t, f.c.sync(ctx, "ns/vm1"))
	assert.Len(t, testutil.Filter(f.kube.Actions(), "create", "pods", ""), 1)

	pods, err := f.kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	assert.False(t, f.c.expectations.Satisfied("uid-1"))
	f.c.expectations.CreationObserved("uid-1") // what the pod informer's add handler does
	assert.True(t, f.c.expectations.Satisfied("uid-1"))
}

// TestOrphanedPods: pods of an instance that no longer exists are deleted.
func TestOrphanedPods(t *testing.T) {
	f := newFixture(t, nil, []*corev1.Pod{newPod("p1", "uid-1"), newPod("p2", "uid-1", terminating)})
	require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
	deletes := testutil.Filter(f.kube.Actions(), "delete", "pods", "")
	require.Len(t, deletes, 1)
	assert.Equal(t, "p1", deletes[0].(k8stesting.DeleteActionImpl).Name)
}

// TestWaitingForClaim: an instance waiting for a claim reports once, not on every sync, and the
// claim's arrival in the informer brings the instance back to the queue.
func TestWaitingForClaim(t *testing.T) {
	f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.VmPhaseUnset, withClaims("late"))}, nil)
	ctx := context.Background()
	require.NoError(t, f.c.sync(ctx, "ns/vm1"))
	require.Len(t, f.events(), 1)

	// What the informer shows after our status write; the event is not repeated.
	vmi := f.vmi("vm1")
	require.NoError(t, f.c.vmiIndexer.Update(vmi))
	f.c.staleVersions.Forget("ns/vm1")
	require.NoError(t, f.c.sync(ctx, "ns/vm1"))
	assert.Empty(t, f.events())
	assert.Empty(t, testutil.Filter(f.kube.Actions(), "create", "pods", ""))

	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
	}
	f.c.enqueueClaimants(newClaim("other", nil))
	assert.Zero(t, f.c.queue.Len(), "a claim no instance names wakes none")
	f.c.enqueueClaimants(newClaim("late", nil))
	require.Equal(t, 1, f.c.queue.Len())
	key, _ := f.c.queue.Get()
	assert.Equal(t, "ns/vm1", key)
}
