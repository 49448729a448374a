package virtctl

import (
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// exposeOptions describe the Service expose creates.
type exposeOptions struct {
	name, protocol, serviceType string
	port, targetPort            int32
}

func newExposeCommand(c *cliContext) *cobra.Command {
	o := exposeOptions{}
	cmd := &cobra.Command{
		Use:   "expose (vm|vmi|vmirs) NAME --name SERVICE --port PORT",
		Short: "Expose a virtual machine's port as a Service",
		Long: "Create a Service that selects the launcher pods of a VM, VMI or VMI replica set by\n" +
			"their labels; the masquerade binding forwards the port to the guest.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, _, ns, err := c.clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var selector map[string]string
			switch args[0] {
			case "vm":
				vm, err := kv.KubevirtV1().VirtualMachines(ns).Get(ctx, args[1], metav1.GetOptions{})
				if err != nil {
					return err
				}
				if vm.Spec.Template != nil {
					selector = vm.Spec.Template.ObjectMeta.Labels
				}
			case "vmi":
				vmi, err := kv.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, args[1], metav1.GetOptions{})
				if err != nil {
					return err
				}
				selector = vmi.Labels
			case "vmirs":
				rs, err := kv.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Get(ctx, args[1], metav1.GetOptions{})
				if err != nil {
					return err
				}
				if rs.Spec.Selector != nil {
					if len(rs.Spec.Selector.MatchExpressions) > 0 {
						return fmt.Errorf("cannot expose a replica set whose selector has expressions")
					}
					selector = rs.Spec.Selector.MatchLabels
				}
			default:
				return fmt.Errorf("unsupported kind %q: vm, vmi or vmirs", args[0])
			}
			svc, err := exposedService(o, selector)
			if err != nil {
				return fmt.Errorf("cannot expose %s %s: %w", args[0], args[1], err)
			}
			kube, _, err := c.kube()
			if err != nil {
				return err
			}
			if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				return err
			}
			fmt.Fprintf(c.streams.Out, "Service %s successfully exposed for %s %s\n", o.name, args[0], args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&o.name, "name", "", "name of the Service (required)")
	cmd.Flags().Int32Var(&o.port, "port", 0, "port of the Service (required)")
	cmd.Flags().Int32Var(&o.targetPort, "target-port", 0, "port in the guest; the Service port when 0")
	cmd.Flags().StringVar(&o.protocol, "protocol", "TCP", "TCP or UDP")
	cmd.Flags().StringVar(&o.serviceType, "type", "ClusterIP", "ClusterIP, NodePort or LoadBalancer")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("port")
	return cmd
}

// exposedService is the Service for a workload selected by the given labels.
func exposedService(o exposeOptions, selector map[string]string) (*corev1.Service, error) {
	if len(selector) == 0 {
		return nil, fmt.Errorf("it has no labels to select its pods by")
	}
	target := o.targetPort
	if target == 0 {
		target = o.port
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceType(o.serviceType),
			Selector: selector,
			Ports: []corev1.ServicePort{{
				Protocol: corev1.Protocol(o.protocol), Port: o.port, TargetPort: intstr.FromInt32(target),
			}},
		},
	}, nil
}
