package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// GetPod reads a pod through kube-apiserver, for the eviction webhook.
func (p launcherPods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return p.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// evacuations gives the eviction webhook virt-api's own instance storage: it reads and marks
// instances in process, with no client of its own and no rights to grant one.
type evacuations struct {
	vmis   rest.Getter
	status rest.Updater
}

func (e evacuations) Get(ctx context.Context, namespace, name string) (*kubevirt.VirtualMachineInstance, error) {
	obj, err := e.vmis.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*kubevirt.VirtualMachineInstance), nil
}

// MarkForEvacuation sets status.evacuationNodeName on the instance read, compare-and-swap:
// another instance of the same name, or a mark set meanwhile, makes it a conflict.
func (e evacuations) MarkForEvacuation(ctx context.Context, vmi *kubevirt.VirtualMachineInstance, node string, dryRun bool) error {
	options := &metav1.UpdateOptions{}
	if dryRun {
		options.DryRun = []string{metav1.DryRunAll}
	}
	ctx = genericapirequest.WithNamespace(ctx, vmi.Namespace)
	_, _, err := e.status.Update(ctx, vmi.Name, rest.DefaultUpdatedObjectInfo(nil,
		func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			current := old.(*kubevirt.VirtualMachineInstance).DeepCopy()
			if current.UID != vmi.UID {
				return nil, apierrors.NewConflict(kubevirt.Resource("virtualmachineinstances"), vmi.Name,
					fmt.Errorf("the instance was replaced"))
			}
			if current.Status.EvacuationNodeName != "" && current.Status.EvacuationNodeName != node {
				return nil, apierrors.NewConflict(kubevirt.Resource("virtualmachineinstances"), vmi.Name,
					fmt.Errorf("the instance is already being evacuated from %s", current.Status.EvacuationNodeName))
			}
			current.Status.EvacuationNodeName = node
			return current, nil
		}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, options)
	return err
}
