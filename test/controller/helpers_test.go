// Package controller runs virt-controller against a real virt-api (embedded etcd) for the
// kubevirt.io objects. Pods and events go to a fake Kubernetes clientset: nothing here needs a
// kubelet, and the kube-apiserver framework (test/integration/framework) is the next step.
package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/launcherpod"
	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

type env struct {
	t    *testing.T
	api  *framework.VirtAPI
	kv   versioned.Interface
	kube *k8sfake.Clientset
	ns   string
}

func newEnv(t *testing.T) *env {
	api := framework.StartVirtAPI(t)
	kube := k8sfake.NewSimpleClientset()
	testutil.GenerateNames(kube)
	return &env{t: t, api: api, kv: api.Client, kube: kube, ns: "default"}
}

// startController runs the controllers until the returned stop is called (or the test ends).
func (e *env) startController() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := manager.DefaultOptions()
	o.Resync = 0
	go func() { done <- manager.Run(ctx, e.kv, e.kube, o) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(e.t, err)
		case <-time.After(30 * time.Second):
			e.t.Error("controllers did not stop")
		}
	}
	e.t.Cleanup(stop)
	return stop
}

func guest() v1.VirtualMachineInstanceSpec {
	return v1.VirtualMachineInstanceSpec{
		Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Devices:   v1.Devices{Disks: []v1.Disk{{Name: "root"}}},
		},
		Volumes: []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "example/disk"}}}},
	}
}

func newVM(name string, strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	labels := map[string]string{"vm": name}
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy),
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: guest()}},
	}
}

func (e *env) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	var last error
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}

func (e *env) vmi(name string) (*v1.VirtualMachineInstance, error) {
	return e.kv.KubevirtV1().VirtualMachineInstances(e.ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (e *env) vm(name string) *v1.VirtualMachine {
	vm, err := e.kv.KubevirtV1().VirtualMachines(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return vm
}

// launcherPods returns the launcher pods by the UID of their instance.
func (e *env) launcherPods() map[string][]corev1.Pod {
	pods, err := e.kube.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(e.t, err)
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		uid := p.Labels[launcherpod.CreatedByLabel]
		out[uid] = append(out[uid], p)
	}
	return out
}

// bindPod plays the scheduler.
func (e *env) bindPod(pod corev1.Pod, node string) {
	pod.Spec.NodeName = node
	_, err := e.kube.CoreV1().Pods(pod.Namespace).Update(context.Background(), &pod, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

// setPhase plays the node agent.
func (e *env) setPhase(name string, phase v1.VirtualMachineInstancePhase) {
	e.eventually(fmt.Sprintf("VMI %s to enter %s", name, phase), func() (bool, error) {
		vmi, err := e.vmi(name)
		if err != nil {
			return false, err
		}
		vmi.Status.Phase = phase
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: metav1.Now()})
		_, err = e.kv.KubevirtV1().VirtualMachineInstances(e.ns).UpdateStatus(context.Background(), vmi, metav1.UpdateOptions{})
		return err == nil, err
	})
}
