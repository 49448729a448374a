package virtctl

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// exposeOptions are KubeVirt's `virtctl expose` flags: what the Service gets.
type exposeOptions struct {
	name, protocol, serviceType, targetPort, portName string
	clusterIP, externalIP, loadBalancerIP             string
	ipFamilies, ipFamilyPolicy                        string
	port, nodePort                                    int32
}

// nodeNameLabel is KubeVirt's label of an instance's node, which it changes on migration.
const nodeNameLabel = "kubevirt.io/nodeName"

// exposeKinds are the kinds expose takes, in every spelling KubeVirt's virtctl takes
// (case-insensitive, short, singular and plural).
var exposeKinds = map[string]resource{
	"vm": vmsResource, "vms": vmsResource, "virtualmachine": vmsResource, "virtualmachines": vmsResource,
	"vmi": vmisResource, "vmis": vmisResource, "virtualmachineinstance": vmisResource, "virtualmachineinstances": vmisResource,
	"vmirs": vmirssResource, "vmirss": vmirssResource, "virtualmachineinstancereplicaset": vmirssResource,
	"virtualmachineinstancereplicasets": vmirssResource,
}

func newExposeCommand(c *cliContext) *cobra.Command {
	o := exposeOptions{}
	cmd := &cobra.Command{
		Use:   "expose (vm|vmi|vmirs) NAME --name SERVICE [--port PORT]",
		Short: "Expose a virtual machine's port as a Service",
		Long: "Create a Service that selects the launcher pods of a VM, VMI or VMI replica set by\n" +
			"their labels; the masquerade binding forwards the port to the guest. Without --port,\n" +
			"the ports the pod network interface declares are exposed.",
		Example:           "  virtctl expose vmi myvm --port=5555 --node-port=30001 --target-port=22 --name=myvm-ssh --type=NodePort",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeKindAndName(map[string]resource{"vm": vmsResource, "vmi": vmisResource, "vmirs": vmirssResource}),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, ok := exposeKinds[strings.ToLower(args[0])]
			if !ok {
				return fmt.Errorf("unsupported resource type %q: vm, vmi or vmirs", args[0])
			}
			kv, _, ns, err := c.clients()
			if err != nil {
				return err
			}
			selector, spec, err := exposedWorkload(cmd.Context(), kv, ns, kind, args[1])
			if err != nil {
				return err
			}
			svc, err := exposedService(o, selector, spec)
			if err != nil {
				return fmt.Errorf("cannot expose %s %s: %w", args[0], args[1], err)
			}
			kube, _, err := c.kube()
			if err != nil {
				return err
			}
			if _, err := kube.CoreV1().Services(ns).Create(cmd.Context(), svc, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("service creation failed: %w", err)
			}
			fmt.Fprintf(c.streams.Out, "Service %s successfully exposed for %s %s\n", o.name, args[0], args[1])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "name of the Service (required)")
	f.Int32Var(&o.port, "port", 0, "port of the Service; without it, the ports the VM's pod network interface declares")
	f.StringVar(&o.targetPort, "target-port", "", "name or number of the port in the guest; the Service port when empty")
	f.StringVar(&o.protocol, "protocol", "TCP", "TCP, UDP or SCTP")
	f.StringVar(&o.serviceType, "type", "ClusterIP", "ClusterIP, NodePort or LoadBalancer")
	f.StringVar(&o.portName, "port-name", "", "name of the Service's port")
	f.Int32Var(&o.nodePort, "node-port", 0, "the node port (NodePort and LoadBalancer); the cluster picks one when 0")
	f.StringVar(&o.clusterIP, "cluster-ip", "", "the Service's cluster IP; empty picks one, None makes it headless")
	f.StringVar(&o.externalIP, "external-ip", "", "an external IP, not managed by the cluster, the Service accepts too")
	f.StringVar(&o.loadBalancerIP, "load-balancer-ip", "", "the IP to ask the load balancer for (LoadBalancer)")
	f.StringVar(&o.ipFamilies, "ip-family", "", "IPv4, IPv6, or both in order (IPv4,IPv6)")
	f.StringVar(&o.ipFamilyPolicy, "ip-family-policy", "", "SingleStack, PreferDualStack or RequireDualStack")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

// exposedWorkload reads the VM, VMI or replica set: the labels its launcher pods carry, and the
// instance spec whose declared ports a Service without --port exposes.
func exposedWorkload(ctx context.Context, kv versioned.Interface, ns string, kind resource, name string) (map[string]string, *v1.VirtualMachineInstanceSpec, error) {
	switch kind {
	case vmsResource:
		vm, err := kv.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		if vm.Spec.Template == nil {
			return nil, nil, nil
		}
		return vm.Spec.Template.ObjectMeta.Labels, &vm.Spec.Template.Spec, nil
	case vmisResource:
		vmi, err := kv.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		labels := map[string]string{}
		for k, v := range vmi.Labels {
			// Labels the controllers put on the instance later, which its launcher pod lacks.
			if k != nodeNameLabel && k != v1.OutdatedLauncherImageLabel {
				labels[k] = v
			}
		}
		return labels, &vmi.Spec, nil
	default:
		rs, err := kv.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		if rs.Spec.Selector == nil {
			return nil, nil, nil
		}
		if len(rs.Spec.Selector.MatchExpressions) > 0 {
			return nil, nil, fmt.Errorf("cannot expose a replica set whose selector has expressions")
		}
		var spec *v1.VirtualMachineInstanceSpec
		if rs.Spec.Template != nil {
			spec = &rs.Spec.Template.Spec
		}
		return rs.Spec.Selector.MatchLabels, spec, nil
	}
}

// exposedService is the Service for a workload selected by the given labels; spec's pod
// network ports are exposed when o names no port.
func exposedService(o exposeOptions, selector map[string]string, spec *v1.VirtualMachineInstanceSpec) (*corev1.Service, error) {
	if len(selector) == 0 {
		return nil, fmt.Errorf("it has no labels to select its pods by")
	}
	protocol := corev1.Protocol(strings.ToUpper(o.protocol))
	switch protocol {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		return nil, fmt.Errorf("unknown protocol %q: TCP, UDP or SCTP", o.protocol)
	}
	var serviceType corev1.ServiceType
	for _, t := range []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer} {
		if strings.EqualFold(o.serviceType, string(t)) {
			serviceType = t
		}
	}
	if serviceType == "" {
		return nil, fmt.Errorf("unknown service type %q: ClusterIP, NodePort or LoadBalancer", o.serviceType)
	}
	if o.nodePort != 0 && serviceType == corev1.ServiceTypeClusterIP {
		return nil, fmt.Errorf("--node-port needs --type NodePort or LoadBalancer")
	}
	if o.loadBalancerIP != "" && serviceType != corev1.ServiceTypeLoadBalancer {
		return nil, fmt.Errorf("--load-balancer-ip needs --type LoadBalancer")
	}
	for flag, ip := range map[string]string{"--external-ip": o.externalIP, "--load-balancer-ip": o.loadBalancerIP} {
		if ip != "" && net.ParseIP(ip) == nil {
			return nil, fmt.Errorf("%s %q is not an IP address", flag, ip)
		}
	}
	if o.clusterIP != "" && o.clusterIP != corev1.ClusterIPNone && net.ParseIP(o.clusterIP) == nil {
		return nil, fmt.Errorf("--cluster-ip %q is neither an IP address nor None", o.clusterIP)
	}

	var ports []corev1.ServicePort
	if o.port != 0 {
		target := intstr.FromInt32(o.port)
		if o.targetPort != "" {
			target = intstr.Parse(o.targetPort)
		}
		ports = []corev1.ServicePort{{Name: o.portName, Protocol: protocol, Port: o.port, TargetPort: target, NodePort: o.nodePort}}
	} else {
		if o.targetPort != "" || o.nodePort != 0 {
			return nil, fmt.Errorf("--target-port and --node-port need --port")
		}
		ports = podNetworkPorts(spec)
		if len(ports) == 0 {
			return nil, fmt.Errorf("no --port, and its pod network interface declares no ports")
		}
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec: corev1.ServiceSpec{
			Type: serviceType, Selector: selector, Ports: ports,
			ClusterIP: o.clusterIP, LoadBalancerIP: o.loadBalancerIP,
		},
	}
	if o.externalIP != "" {
		svc.Spec.ExternalIPs = []string{o.externalIP}
	}
	if o.ipFamilies != "" {
		for _, f := range strings.Split(o.ipFamilies, ",") {
			switch family := corev1.IPFamily(strings.TrimSpace(f)); family {
			case corev1.IPv4Protocol, corev1.IPv6Protocol:
				svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, family)
			default:
				return nil, fmt.Errorf("unknown IP family %q: IPv4 or IPv6", f)
			}
		}
	}
	if o.ipFamilyPolicy != "" {
		policy := corev1.IPFamilyPolicy(o.ipFamilyPolicy)
		switch policy {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
			svc.Spec.IPFamilyPolicy = &policy
		default:
			return nil, fmt.Errorf("unknown IP family policy %q: SingleStack, PreferDualStack or RequireDualStack", o.ipFamilyPolicy)
		}
	}
	return svc, nil
}

// podNetworkPorts are the ports the interface on the pod network declares, as KubeVirt's
// virtctl names them (port-1, port-2, ...).
func podNetworkPorts(spec *v1.VirtualMachineInstanceSpec) []corev1.ServicePort {
	if spec == nil {
		return nil
	}
	podNetwork := ""
	for _, n := range spec.Networks {
		if n.Pod != nil {
			podNetwork = n.Name
		}
	}
	var ports []corev1.ServicePort
	for _, iface := range spec.Domain.Devices.Interfaces {
		if iface.Name != podNetwork || podNetwork == "" {
			continue
		}
		for i, p := range iface.Ports {
			protocol := corev1.Protocol(strings.ToUpper(p.Protocol))
			if protocol == "" {
				protocol = corev1.ProtocolTCP
			}
			ports = append(ports, corev1.ServicePort{Name: fmt.Sprintf("port-%d", i+1), Protocol: protocol, Port: p.Port,
				TargetPort: intstr.FromInt32(p.Port)})
		}
	}
	return ports
}
