package handler

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/handler/vmimetrics"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// MetricsTargets lists the instances on this node for the metrics collector: every one the
// handler's cache holds, and for each whose launcher runs a guest, how to ask it for
// statistics (through the launcher's verified socket, as every call).
func (c *Controller) MetricsTargets() []vmimetrics.Target {
	vmis, err := c.lister.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "list instances for metrics")
		return nil
	}
	c.mu.Lock()
	launchers := make(map[string]*launcher, len(c.launchers))
	for k, l := range c.launchers {
		launchers[k] = l
	}
	c.mu.Unlock()
	out := make([]vmimetrics.Target, 0, len(vmis))
	for _, vmi := range vmis {
		t := vmimetrics.Target{
			Name: vmi.Name, Namespace: vmi.Namespace, UID: vmi.UID, Phase: string(vmi.Status.Phase),
			Interfaces: map[string]bool{}, Disks: map[string]bool{}, VCPUs: int(vmi.Spec.Domain.VCPUs()),
		}
		for _, i := range vmi.Spec.Domain.Devices.Interfaces {
			t.Interfaces[i.Name] = true
		}
		for _, d := range vmi.Spec.Domain.Devices.Disks {
			t.Disks[d.Name] = true
		}
		if l := launchers[vmi.Namespace+"/"+vmi.Name]; l != nil && l.uid == vmi.UID {
			state := l.State()
			if state.Phase.GuestRuns() {
				client := l.client
				t.Stats = func(ctx context.Context) (api.Stats, error) { return client.Stats(ctx) }
			}
			t.Migration = state.Migration
		}
		out = append(out, t)
	}
	return out
}
