package virtualmachineinstance

import (
	"context"

	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// Commands are the guest commands of instances: pause, unpause, softreboot and reset. virt-api checks
// the instance's state and forwards the command to the node that runs it.
type Commands struct {
	vmis  rest.Getter
	nodes Nodes
}

// NewCommands returns the guest commands; nodes may be nil when no node agent is reachable.
func NewCommands(vmis rest.Getter, nodes Nodes) *Commands {
	return &Commands{vmis: vmis, nodes: nodes}
}

// Pause serves virtualmachineinstances/pause.
func (c *Commands) Pause(ctx context.Context, name string, body action.Body) error {
	opts := v1.PauseOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	return c.run(ctx, name, "pause", action.IsDryRun(opts.DryRun), func(vmi *kubevirt.VirtualMachineInstance) error {
		if vmi.Status.Phase != kubevirt.Running {
			return conflict(name, "VM is not running")
		}
		if hasCondition(vmi, kubevirt.VirtualMachineInstancePaused) {
			return conflict(name, "VMI is already paused")
		}
		return nil
	})
}

// Unpause serves virtualmachineinstances/unpause.
func (c *Commands) Unpause(ctx context.Context, name string, body action.Body) error {
	opts := v1.UnpauseOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	return c.run(ctx, name, "unpause", action.IsDryRun(opts.DryRun), func(vmi *kubevirt.VirtualMachineInstance) error {
		if vmi.Status.Phase != kubevirt.Running || !hasCondition(vmi, kubevirt.VirtualMachineInstancePaused) {
			return conflict(name, "VMI is not paused")
		}
		return nil
	})
}

// SoftReboot serves virtualmachineinstances/softreboot: an ACPI reboot request to the guest.
func (c *Commands) SoftReboot(ctx context.Context, name string, body action.Body) error {
	opts := v1.SoftRebootOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	return c.run(ctx, name, "softreboot", action.IsDryRun(opts.DryRun), func(vmi *kubevirt.VirtualMachineInstance) error {
		if vmi.Status.Phase != kubevirt.Running {
			return conflict(name, "VM is not running")
		}
		if hasCondition(vmi, kubevirt.VirtualMachineInstancePaused) {
			return conflict(name, "VMI is paused")
		}
		if f := vmi.Spec.Domain.Features; f != nil && f.ACPI.Enabled != nil && !*f.ACPI.Enabled {
			return conflict(name, "VMI has ACPI disabled and no guest agent to ask for a reboot")
		}
		return nil
	})
}

// Reset serves virtualmachineinstances/reset (KubeVirt v1.5+): a hard reset of the guest, as
// the reset button, which needs nothing of the guest. KubeVirt's clients send no body.
func (c *Commands) Reset(ctx context.Context, name string, _ action.Body) error {
	return c.run(ctx, name, "reset", false, func(vmi *kubevirt.VirtualMachineInstance) error {
		if vmi.Status.Phase != kubevirt.Running {
			return conflict(name, "Failed to reset non-running VMI with phase %s", vmi.Status.Phase)
		}
		if hasCondition(vmi, kubevirt.VirtualMachineInstancePaused) {
			return conflict(name, "VMI is paused")
		}
		return nil
	})
}

// run checks the instance, then sends the command to its node unless it is a dry run.
func (c *Commands) run(ctx context.Context, name, call string, dryRun bool, check func(*kubevirt.VirtualMachineInstance) error) error {
	vmi, err := getInstance(ctx, c.vmis, name)
	if err != nil {
		return err
	}
	if err := check(vmi); err != nil {
		return err
	}
	if dryRun {
		return nil
	}
	if c.nodes == nil {
		return nodeError(name, errNoNodes)
	}
	if err := c.nodes.Put(ctx, vmi.Status.NodeName, vmi.Namespace, vmi.Name, call); err != nil {
		return nodeError(name, err)
	}
	return nil
}
