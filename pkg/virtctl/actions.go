package virtctl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

var subresourcesGV = schema.GroupVersion{Group: "subresources.kubevirt.io", Version: "v1"}

// actions sends the imperative actions, as KubeVirt's clients do: PUT with an options body.
type actions struct {
	client rest.Interface
}

func newActions(cfg *rest.Config) (*actions, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &subresourcesGV
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &actions{client: client}, nil
}

func (a *actions) put(ctx context.Context, namespace, resource, name, action string, options interface{}) error {
	req := a.client.Put().Namespace(namespace).Resource(resource).Name(name).SubResource(action)
	if options != nil {
		body, err := json.Marshal(options)
		if err != nil {
			return err
		}
		req = req.Body(body)
	}
	return req.Do(ctx).Error()
}

func dryRun(enabled bool) []string {
	if enabled {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func newStartCommand(c *cliContext) *cobra.Command {
	var paused, dry bool
	cmd := &cobra.Command{
		Use:               "start VM",
		ValidArgsFunction: c.completeNames(vmsResource),
		Short:             "Start a virtual machine",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			if err := acts.put(cmd.Context(), ns, "virtualmachines", args[0], "start", &v1.StartOptions{Paused: paused, DryRun: dryRun(dry)}); err != nil {
				return fmt.Errorf("starting VM %s: %w", args[0], err)
			}
			fmt.Fprintf(c.streams.Out, "VM %s was scheduled to start\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&paused, "paused", false, "start the guest paused")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

func newStopCommand(c *cliContext) *cobra.Command {
	var force, dry bool
	var gracePeriod int64
	cmd := &cobra.Command{
		Use:               "stop VM",
		ValidArgsFunction: c.completeNames(vmsResource),
		Short:             "Stop a virtual machine",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			opts := &v1.StopOptions{DryRun: dryRun(dry)}
			if cmd.Flags().Changed("grace-period") {
				if !force {
					return fmt.Errorf("--grace-period needs --force")
				}
				opts.GracePeriod = &gracePeriod
			}
			if err := acts.put(cmd.Context(), ns, "virtualmachines", args[0], "stop", opts); err != nil {
				return fmt.Errorf("stopping VM %s: %w", args[0], err)
			}
			fmt.Fprintf(c.streams.Out, "VM %s was scheduled to stop\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "stop without waiting for the guest's full grace period")
	cmd.Flags().Int64Var(&gracePeriod, "grace-period", -1, "seconds the guest gets to shut down (with --force)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

func newRestartCommand(c *cliContext) *cobra.Command {
	var force, dry bool
	var gracePeriod int64
	cmd := &cobra.Command{
		Use:               "restart VM",
		ValidArgsFunction: c.completeNames(vmsResource),
		Short:             "Restart a virtual machine",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			opts := &v1.RestartOptions{DryRun: dryRun(dry)}
			if cmd.Flags().Changed("grace-period") {
				if !force || gracePeriod != 0 {
					return fmt.Errorf("a forced restart needs --force --grace-period=0")
				}
				opts.GracePeriodSeconds = &gracePeriod
			}
			if err := acts.put(cmd.Context(), ns, "virtualmachines", args[0], "restart", opts); err != nil {
				return fmt.Errorf("restarting VM %s: %w", args[0], err)
			}
			fmt.Fprintf(c.streams.Out, "VM %s was scheduled to restart\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete the launcher pod at once (with --grace-period=0)")
	cmd.Flags().Int64Var(&gracePeriod, "grace-period", -1, "0 with --force")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

// newPauseCommand is pause or unpause: "virtctl pause vm NAME" acts on the VM's instance.
func newPauseCommand(c *cliContext, action string) *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:               action + " (vm|vmi) NAME",
		Short:             fmt.Sprintf("%s a running virtual machine", capitalize(action)),
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeKindAndName(map[string]resource{"vm": vmsResource, "vmi": vmisResource}),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name := args[0], args[1]
			if kind != "vm" && kind != "vmi" {
				return fmt.Errorf("unsupported kind %q: vm or vmi", kind)
			}
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			var opts interface{} = &v1.PauseOptions{DryRun: dryRun(dry)}
			if action == "unpause" {
				opts = &v1.UnpauseOptions{DryRun: dryRun(dry)}
			}
			if err := acts.put(cmd.Context(), ns, "virtualmachineinstances", name, action, opts); err != nil {
				return fmt.Errorf("%s %s %s: %w", action, kind, name, err)
			}
			fmt.Fprintf(c.streams.Out, "VMI %s was scheduled to %s\n", name, action)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

func newSoftRebootCommand(c *cliContext) *cobra.Command {
	return &cobra.Command{
		Use:               "soft-reboot VMI",
		ValidArgsFunction: c.completeNames(vmisResource),
		Short:             "Ask the guest to reboot (ACPI)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			if err := acts.put(cmd.Context(), ns, "virtualmachineinstances", args[0], "softreboot", nil); err != nil {
				return fmt.Errorf("soft reboot of VMI %s: %w", args[0], err)
			}
			fmt.Fprintf(c.streams.Out, "VMI %s was scheduled to soft reboot\n", args[0])
			return nil
		},
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
