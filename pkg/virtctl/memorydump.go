package virtctl

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	exportvalidation "github.com/hangarvm/hangar/pkg/apis/export/validation"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// memory-dump, flag for flag as KubeVirt's virtctl: get asks the VM for a dump of its guest's
// memory to a claim (made first with --create-claim, sized for the guest), remove dissociates
// the claim. download, and get's --output once the dump is done, fetch the dump file through a
// VirtualMachineExport of the claim, deleted afterwards.

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
			if action == "download" {
				return c.downloadMemoryDump(cmd.Context(), vm, output, format, localPort, portForward)
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
				if output != "" {
					if err := c.awaitMemoryDump(ctx, kv, ns, vm); err != nil {
						return err
					}
					return c.downloadMemoryDump(ctx, vm, output, format, localPort, portForward)
				}
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
	cmd.Flags().StringVar(&output, "output", "", "download the dump to this file, through a VirtualMachineExport of its claim")
	cmd.Flags().BoolVar(&portForward, "port-forward", false, "download through a port-forward (with --output)")
	cmd.Flags().StringVar(&format, "format", "raw", "the download's format, gzip or raw (with --output)")
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

// awaitMemoryDump waits for the VM's memory dump to end.
func (c *cliContext) awaitMemoryDump(ctx context.Context, kv versioned.Interface, ns, vm string) error {
	fmt.Fprintf(c.streams.Out, "Waiting for memory dump of VM %s to complete...\n", vm)
	return wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		obj, err := kv.KubevirtV1().VirtualMachines(ns).Get(ctx, vm, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch req := obj.Status.MemoryDumpRequest; {
		case req == nil:
			return false, fmt.Errorf("VM %s has no memory dump request", vm)
		case req.Phase == v1.MemoryDumpFailed:
			return false, fmt.Errorf("the memory dump of VM %s failed: %s", vm, req.Message)
		default:
			return req.Phase == v1.MemoryDumpCompleted, nil
		}
	})
}

// downloadMemoryDump downloads the VM's completed memory dump: an export of its claim serves
// the dump file; the export is deleted afterwards.
func (c *cliContext) downloadMemoryDump(ctx context.Context, vm, output, format, localPort string, portForward bool) error {
	if output == "" {
		return fmt.Errorf("missing outputFile, use --output to specify the file the memory dump is downloaded to")
	}
	if format != "raw" && format != "gzip" {
		return fmt.Errorf("supported formats are gzip and raw, not %q", format)
	}
	kv, _, ns, err := c.clients()
	if err != nil {
		return err
	}
	obj, err := kv.KubevirtV1().VirtualMachines(ns).Get(ctx, vm, metav1.GetOptions{})
	if err != nil {
		return err
	}
	req := obj.Status.MemoryDumpRequest
	if req == nil || req.Phase != v1.MemoryDumpCompleted || req.FileName == nil {
		return fmt.Errorf("VM %s has no completed memory dump to download", vm)
	}
	exports, _, err := c.exportClient()
	if err != nil {
		return err
	}
	kube, _, err := c.kube()
	if err != nil {
		return err
	}
	name := memoryDumpExportName(req.ClaimName)
	o := vmExportOptions{pvc: req.ClaimName, output: output, format: "raw", localPort: localPort, portForward: portForward, readyTimeout: 2 * time.Minute}
	file := *req.FileName
	return o.downloadWith(ctx, c, exports, kube, ns, name, func(link *exportv1beta1.VirtualMachineExportLink) (string, bool, error) {
		for _, v := range link.Volumes {
			for _, f := range v.Formats {
				if f.Format == exportv1beta1.Dir {
					return strings.TrimSuffix(f.Url, "dir") + url.PathEscape(file), false, nil
				}
			}
		}
		return "", false, fmt.Errorf("the export of claim %s serves no files", req.ClaimName)
	}, format == "gzip")
}

// memoryDumpExportName names the export of a dump's claim: a claim's name may have dots and
// 253 characters, an export's neither (its Service is named after it).
func memoryDumpExportName(claim string) string {
	name := "export-" + strings.ReplaceAll(claim, ".", "-")
	if len(name) > exportvalidation.MaxNameLength {
		name = name[:exportvalidation.MaxNameLength]
	}
	return strings.TrimRight(name, "-")
}
