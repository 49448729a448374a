package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// launcherPods deletes launcher pods through kube-apiserver, for forced restarts, and finds
// their addresses, for port-forwards.
type launcherPods struct {
	kube kubernetes.Interface
}

func (p launcherPods) DeleteLauncherPods(ctx context.Context, namespace string, vmiUID types.UID, gracePeriodSeconds int64) error {
	selector := labels.Set{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(vmiUID)}.AsSelector().String()
	err := p.kube.CoreV1().Pods(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: &gracePeriodSeconds},
		metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("delete launcher pods of instance %s: %w", vmiUID, err)
	}
	return nil
}

// LauncherPodIP is the IPv4 address of the instance's launcher pod on its node, as the pod
// object has it (the kubelet's record). The pod is the one the instance's status records
// for its node (status.activePods, which Hangar's controllers write), in the instance's
// namespace; a pod on the host's network, or not running, has none to offer.
func (p launcherPods) LauncherPodIP(ctx context.Context, vmi *kubevirt.VirtualMachineInstance) (netip.Addr, error) {
	node := vmi.Status.NodeName
	var uids []types.UID
	for uid, n := range vmi.Status.ActivePods {
		if n == node {
			uids = append(uids, uid)
		}
	}
	if node == "" || len(uids) != 1 {
		return netip.Addr{}, fmt.Errorf("instance %s/%s has %d launcher pods recorded on its node %q", vmi.Namespace, vmi.Name, len(uids), node)
	}
	selector := labels.Set{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(vmi.UID)}.AsSelector().String()
	pods, err := p.kube.CoreV1().Pods(vmi.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("launcher pods of instance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	for i := range pods.Items {
		if pods.Items[i].UID == uids[0] {
			return podIPv4(&pods.Items[i], node)
		}
	}
	return netip.Addr{}, fmt.Errorf("launcher pod %s of instance %s/%s not found", uids[0], vmi.Namespace, vmi.Name)
}

// podIPv4 is the IPv4 address of a running pod of node on the pod network (the binding's
// forwarding is IPv4).
func podIPv4(pod *corev1.Pod, node string) (netip.Addr, error) {
	switch {
	case pod.Spec.NodeName != node:
		return netip.Addr{}, fmt.Errorf("launcher pod %s runs on node %q, not %q", pod.Name, pod.Spec.NodeName, node)
	case pod.Spec.HostNetwork:
		return netip.Addr{}, fmt.Errorf("launcher pod %s is on the host's network", pod.Name)
	case pod.Status.Phase != corev1.PodRunning:
		return netip.Addr{}, fmt.Errorf("launcher pod %s is %s, not Running", pod.Name, pod.Status.Phase)
	}
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
			return ip, nil
		}
	}
	return netip.Addr{}, errors.New("launcher pod " + pod.Name + " has no IPv4 address yet")
}
