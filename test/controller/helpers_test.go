// Package controller tests virt-controller on real components. With the build tag kube (as
// hack/test.sh runs them), the controllers talk to a real kube-apiserver only, with virt-api
// behind it through APIServices and kube-controller-manager's garbage collector, RBAC
// aggregation and service-account controllers (test/integration/framework): launcher pods and
// events are real objects. No kubelet and no scheduler run there, so the tests bind pods and
// confirm their deletion themselves. The benchmarks measure the controllers both there and
// with pods in a fake clientset.
package controller

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

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

func newReplicaSet(name string, replicas int32) *v1.VirtualMachineInstanceReplicaSet {
	labels := map[string]string{"set": name}
	return &v1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineInstanceReplicaSetSpec{Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: guest()}},
	}
}

// waitFor polls cond until it holds, failing the test after timeout with the last error.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}

// heap is the live heap after collecting garbage.
func heap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
