// Package integration tests virt-api end to end over HTTP: the real server, the real etcd,
// the generated clientset and kubectl.
package integration

import (
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// api is shared by the tests; each test works in a namespace of its own.
var api *framework.VirtAPI

func TestMain(m *testing.M) {
	var err error
	api, err = framework.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	api.Stop()
	os.RemoveAll(api.Dir)
	os.Exit(code)
}

// guest is a small valid instance spec.
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
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(strategy),
			Template:    &v1.VirtualMachineInstanceTemplateSpec{Spec: guest()},
		},
	}
}

func newVMI(name string) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: guest()}
}

func newReplicaSet(name string, replicas int32) *v1.VirtualMachineInstanceReplicaSet {
	labels := map[string]string{"set": name}
	return &v1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: guest()},
		},
	}
}
