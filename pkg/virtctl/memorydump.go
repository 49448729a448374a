package virtctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// memory-dump, flag for flag as KubeVirt's virtctl: get asks the VM for a dump of its guest's
// memory to a claim (made first with --create-claim, sized for the guest), remove dissociates
// the claim. download, and get's --output, read the dump through a VirtualMachineExport,
// which Hangar does not serve yet: they say so rather than half work.

func newMemoryDumpCommand(c *cliContext) *cobra.Command {
	var claim, storageClass, accessMode, output, format, localPort string
	var create, portForward bool
	cmd := &cobra.Command{
		Use:   "memory-dump get|download|remove VM",
		Short: "Dump the memory of a running VM to a claim",
		Example: `  # Dump the memory of my-vm to a new claim sized for it:
  virtctl memory-dump get my-vm --claim-name=my-dump --create-claim
  # Dump it again, to the claim associated already:
  virtctl memory-dump get my-vm
  # Dissociate the claim from the VM:
  virtctl memory-dump remove my-vm`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			action, vm := args[0], args[1]
			if action == "download" || output != "" {
				return fmt.Errorf("downloading a memory dump needs a VirtualMachineExport, which Hangar does not serve yet: " +
					"read the dump from its claim with a pod that mounts it (the file's name is in the VM's status.memoryDumpRequest.fileName)")
			}
			kv, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			switch action {
			case "get":
				if create {
					if claim == "" {
						return fmt.Errorf("missing claim name")
					}
					vmObj, err := kv.KubevirtV1().VirtualMachines(ns).Get(ctx, vm, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if vmObj.Status.MemoryDumpRequest != nil {
						return fmt.Errorf("please remove current memory dump association before creating a new claim for a new memory dump")
					}
					vmi, err := kv.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vm, metav1.GetOptions{})
					if err != nil {
						return fmt.Errorf("the VM's instance: %w", err)
					}
					if err := c.createMemoryDumpClaim(ctx, ns, claim, storageClass, accessMode, v1.MemoryDumpClaimSize(&vmi.Spec.Domain)); err != nil {
						return err
					}
				}
				if err := acts.put(ctx, ns, "virtualmachines", vm, "memorydump", &v1.VirtualMachineMemoryDumpRequest{ClaimName: claim}); err != nil {
					return fmt.Errorf("error dumping vm memory, %w", err)
				}
				fmt.Fprintf(c.streams.Out, "Successfully submitted memory dump request of VM %s\n", vm)
			case "remove":
				if err := acts.put(ctx, ns, "virtualmachines", vm, "removememorydump", nil); err != nil {
					return fmt.Errorf("error removing memory dump association, %w", err)
				}
				fmt.Fprintf(c.streams.Out, "Successfully submitted remove memory dump association of VM %s\n", vm)
			default:
				return fmt.Errorf("invalid action type %s", action)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&claim, "claim-name", "", "the claim the memory dump goes to")
	cmd.Flags().BoolVar(&create, "create-claim", false, "create the claim, sized for the guest's memory")
	cmd.Flags().StringVar(&storageClass, "storage-class", "", "the created claim's storage class")
	cmd.Flags().StringVar(&accessMode, "access-mode", "", "the created claim's access mode (ReadWriteOnce or ReadWriteMany)")
	cmd.Flags().StringVar(&output, "output", "", "download the dump to this file (needs a VirtualMachineExport: not served yet)")
	cmd.Flags().BoolVar(&portForward, "port-forward", false, "download through a port-forward (with --output)")
	cmd.Flags().StringVar(&format, "format", "", "the download's format, gzip or raw (with --output)")
	cmd.Flags().StringVar(&localPort, "local-port", "0", "the port-forward's local port (with --port-forward)")
	return cmd
}

// createMemoryDumpClaim makes the file system claim a dump of size bytes goes to, as KubeVirt's
// virtctl makes it.
func (c *cliContext) createMemoryDumpClaim(ctx context.Context, ns, name, storageClass, accessMode string, size apiresource.Quantity) error {
	kube, _, err := c.kube()
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("PVC %s/%s already exists, check if it should be created if not remove create flag", ns, name)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	mode := corev1.ReadWriteOnce
	switch corev1.PersistentVolumeAccessMode(accessMode) {
	case "", corev1.ReadWriteOnce:
	case corev1.ReadWriteMany:
		mode = corev1.ReadWriteMany
	case corev1.ReadOnlyMany:
		return fmt.Errorf("cannot dump memory to a readonly pvc, use either ReadWriteOnce or ReadWriteMany if supported")
	default:
		return fmt.Errorf("invalid access mode, use either ReadWriteOnce or ReadWriteMany if supported")
	}
	fs := corev1.PersistentVolumeFilesystem
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			VolumeMode:  &fs,
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if storageClass != "" {
		pvc.Spec.StorageClassName = &storageClass
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(c.streams.Out, "PVC %s/%s created\n", ns, name)
	return nil
}
