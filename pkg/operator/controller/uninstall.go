package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/operator/apply"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// Reasons of the conditions while Hangar is removed.
const (
	ReasonWorkloadsExist    = "WorkloadsExist"
	ReasonRemovingWorkloads = "RemovingWorkloads"
	ReasonRemoving          = "Removing"
)

// uninstall removes Hangar once its object is deleted: the workloads first (with
// RemoveWorkloads; otherwise it waits while any exist), then the APIServices and the webhook,
// so that no request of the cluster (a namespace's deletion, a drain's eviction) waits on a
// virt-api that is going, then the components, then what they used. The finalizer goes last.
func (c *Controller) uninstall(ctx context.Context, h *operatorv1alpha1.Hangar) (time.Duration, error) {
	if !hasFinalizer(h) {
		return 0, nil
	}
	st := newStatus(h, c.config.Version)
	st.Phase = operatorv1alpha1.PhaseDeleting
	after, err := c.remove(ctx, h, st)
	if err != nil {
		st.degraded(ReasonRemoving, err.Error())
	}
	if after == 0 && err == nil {
		h.Finalizers = slices.DeleteFunc(h.Finalizers, func(f string) bool { return f == Finalizer })
		_, err := c.clients.Operator.HangarvmV1alpha1().Hangars().Update(ctx, h, metav1.UpdateOptions{})
		if err == nil {
			klog.InfoS("Hangar removed")
		}
		return 0, err
	}
	if werr := c.writeStatus(ctx, h, st); werr != nil && err == nil && !apierrors.IsNotFound(werr) {
		err = werr
	}
	return after, err
}

// remove does one step of the removal; 0 means it is done.
func (c *Controller) remove(ctx context.Context, h *operatorv1alpha1.Hangar, st *status) (time.Duration, error) {
	removeAll := h.Spec.UninstallStrategy == operatorv1alpha1.UninstallRemoveWorkloads
	workloads, err := c.workloads(ctx)
	switch {
	case err == nil:
	case !c.apiServed():
		// virt-api is gone already (an earlier removal got this far, or it never ran):
		// there is nothing to list through, and nothing it served can remain.
		workloads = nil
	case removeAll:
		// virt-api does not answer, and whoever set RemoveWorkloads wants Hangar gone with
		// whatever it ran: the instances' launcher pods go with their namespaces' owners.
		klog.InfoS("Removing Hangar without knowing its workloads", "err", err)
		c.recorder.Eventf(h, corev1.EventTypeWarning, "WorkloadsUnknown",
			"virt-api does not answer (%v): removing Hangar anyway, as uninstallStrategy RemoveWorkloads asks", err)
		workloads = nil
	default:
		st.degraded(ReasonWorkloadsExist, fmt.Sprintf("cannot tell whether VMs exist (%v): Hangar is not removed until "+
			"virt-api answers, or spec.uninstallStrategy is RemoveWorkloads", err))
		return retryBlocked, nil
	}
	if len(workloads) > 0 {
		if !removeAll {
			st.degraded(ReasonWorkloadsExist, fmt.Sprintf("Hangar is not removed while VMs exist (%s, ...): delete them, or set "+
				"spec.uninstallStrategy to RemoveWorkloads to have them deleted", workloads[0]))
			return retryBlocked, nil
		}
		st.progressing(ReasonRemovingWorkloads, fmt.Sprintf("deleting %d VMs, replica sets and instances", len(workloads)))
		if err := c.deleteWorkloads(ctx); err != nil {
			return 0, err
		}
		return 5 * time.Second, nil
	}
	// The API's entry points first, then the rest; each step waits for the one before. Of the
	// Prometheus Operator's kinds, only those the cluster serves (it may have gone first).
	served, err := apply.Served(c.clients.Kube.Discovery())
	if err != nil {
		return 0, err
	}
	for _, kinds := range [][]apply.Kind{apply.Kinds[:2], apply.KindsServed(apply.Kinds[2:], served)} {
		remaining, err := c.applier.DeleteAll(ctx, kinds)
		if err != nil {
			return 0, err
		}
		if remaining > 0 {
			st.progressing(ReasonRemoving, fmt.Sprintf("%d of Hangar's objects are being deleted", remaining))
			return 2 * time.Second, nil
		}
	}
	// etcd's volumes: the data of a removed installation is gone with it.
	claims := c.clients.Kube.CoreV1().PersistentVolumeClaims(render.Namespace)
	if err := claims.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + render.EtcdName}); err != nil {
		return 0, err
	}
	c.recorder.Eventf(h, corev1.EventTypeNormal, "Removed", "Hangar's components are removed")
	return 0, nil
}

// workloads lists what keeps Hangar from being removed: VMs, replica sets and instances.
func (c *Controller) workloads(ctx context.Context) ([]string, error) {
	kv := c.clients.KubeVirt.KubevirtV1()
	var names []string
	vms, err := kv.VirtualMachines("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, vm := range vms.Items {
		names = append(names, "VirtualMachine "+vm.Namespace+"/"+vm.Name)
	}
	sets, err := kv.VirtualMachineInstanceReplicaSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, rs := range sets.Items {
		names = append(names, "VirtualMachineInstanceReplicaSet "+rs.Namespace+"/"+rs.Name)
	}
	vmis, err := kv.VirtualMachineInstances("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, vmi := range vmis.Items {
		names = append(names, "VirtualMachineInstance "+vmi.Namespace+"/"+vmi.Name)
	}
	return names, nil
}

// deleteWorkloads deletes every VM, replica set and instance; their launcher pods go with
// the instances.
func (c *Controller) deleteWorkloads(ctx context.Context) error {
	kv := c.clients.KubeVirt.KubevirtV1()
	vms, err := kv.VirtualMachines("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, vm := range vms.Items {
		if err := kv.VirtualMachines(vm.Namespace).Delete(ctx, vm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	sets, err := kv.VirtualMachineInstanceReplicaSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, rs := range sets.Items {
		if err := kv.VirtualMachineInstanceReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	vmis, err := kv.VirtualMachineInstances("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, vmi := range vmis.Items {
		if err := kv.VirtualMachineInstances(vmi.Namespace).Delete(ctx, vmi.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// apiServed says whether any of Hangar's APIServices still exists.
func (c *Controller) apiServed() bool {
	services, err := c.apiServices.List(labels.Everything())
	return err != nil || len(services) > 0
}
