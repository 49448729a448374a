package virtctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// addvolume and removevolume, flag for flag as KubeVirt's virtctl: the volume is a DataVolume
// of that name where CDI has one, else the claim of that name; --persist asks the VM (its
// spec keeps the volume across restarts), otherwise the running instance.

var dataVolumesGVR = schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datavolumes"}

func newAddVolumeCommand(c *cliContext) *cobra.Command {
	var volume, serial, cache, diskType string
	var persist, dry bool
	cmd := &cobra.Command{
		Use:               "addvolume VM",
		ValidArgsFunction: c.completeNames(vmisResource),
		Short:             "Hotplug a claim or DataVolume into a running virtual machine",
		Example: `  # Attach the claim (or DataVolume) example-dv to the running VM fedora-dv:
  virtctl addvolume fedora-dv --volume-name=example-dv
  # And keep it in the VM's spec, so it is there after a restart:
  virtctl addvolume fedora-dv --volume-name=example-dv --persist`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if volume == "" {
				return fmt.Errorf("--volume-name is required")
			}
			if cache != "" {
				return fmt.Errorf("--cache is not supported: Hangar's disks have no cache setting")
			}
			if diskType != "disk" {
				return fmt.Errorf("invalid disk type %q: Hangar hotplugs disks (--disk-type=disk)", diskType)
			}
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			source, err := c.hotplugSource(cmd.Context(), ns, volume)
			if err != nil {
				return fmt.Errorf("error adding volume: %w", err)
			}
			opts := &v1.AddVolumeOptions{Name: volume, VolumeSource: source, DryRun: dryRun(dry),
				Disk: &v1.Disk{Name: volume, Serial: serial, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}}}
			if opts.Disk.Serial == "" {
				opts.Disk.Serial = volume
			}
			resource := "virtualmachineinstances"
			if persist {
				resource = "virtualmachines"
			}
			if err := acts.put(cmd.Context(), ns, resource, args[0], "addvolume", opts); err != nil {
				return fmt.Errorf("error adding volume: %w", err)
			}
			fmt.Fprintf(c.streams.Out, "Successfully submitted add volume request to VM %s for volume %s\n", args[0], volume)
			return nil
		},
	}
	cmd.Flags().StringVar(&volume, "volume-name", "", "the claim or DataVolume to hotplug (and the volume's name)")
	cmd.Flags().StringVar(&serial, "serial", "", "the disk's serial number, as the guest sees it (default: the volume's name)")
	cmd.Flags().StringVar(&cache, "cache", "", "the disk's cache mode (not supported: KubeVirt's flag, refused)")
	cmd.Flags().StringVar(&diskType, "disk-type", "disk", "disk (a LUN is not supported)")
	cmd.Flags().BoolVar(&persist, "persist", false, "keep the volume in the VM's spec")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

func newRemoveVolumeCommand(c *cliContext) *cobra.Command {
	var volume string
	var persist, dry bool
	cmd := &cobra.Command{
		Use:               "removevolume VM",
		ValidArgsFunction: c.completeNames(vmisResource),
		Short:             "Take a hotplugged volume out of a running virtual machine",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if volume == "" {
				return fmt.Errorf("--volume-name is required")
			}
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			resource := "virtualmachineinstances"
			if persist {
				resource = "virtualmachines"
			}
			opts := &v1.RemoveVolumeOptions{Name: volume, DryRun: dryRun(dry)}
			if err := acts.put(cmd.Context(), ns, resource, args[0], "removevolume", opts); err != nil {
				return fmt.Errorf("error removing volume: %w", err)
			}
			fmt.Fprintf(c.streams.Out, "Successfully submitted remove volume request to VM %s for volume %s\n", args[0], volume)
			return nil
		},
	}
	cmd.Flags().StringVar(&volume, "volume-name", "", "the hotplugged volume to remove")
	cmd.Flags().BoolVar(&persist, "persist", false, "remove the volume from the VM's spec too")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

// hotplugSource is the DataVolume name names where CDI serves one, else the claim.
func (c *cliContext) hotplugSource(ctx context.Context, ns, name string) (*v1.HotplugVolumeSource, error) {
	if dyn, _, err := c.dynamicClient(); err == nil {
		if _, err := dyn.Resource(dataVolumesGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return &v1.HotplugVolumeSource{DataVolume: &v1.DataVolumeSource{Name: name, Hotpluggable: true}}, nil
		}
	}
	kube, _, err := c.kube()
	if err != nil {
		return nil, err
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("volume %s is not a DataVolume or PersistentVolumeClaim", name)
		}
		return nil, err
	}
	return &v1.HotplugVolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}, Hotpluggable: true}}, nil
}
