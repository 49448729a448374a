//go:build libvirt

package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/setup"
)

// TestNetworkSetupFigures measures what virt-handler spends per instance on the pod side of
// its network (setup.Pod from outside the pod's namespace, as the handler calls it),
// HANGAR_BENCH_RUNS times per binding (skipped without it), each in a fresh pod stand-in.
// hack/bench/network.sh prints the figures.
func TestNetworkSetupFigures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("HANGAR_BENCH_RUNS"))
	if runs <= 0 {
		t.Skip("set HANGAR_BENCH_RUNS")
	}
	bindings := []struct {
		name string
		vmi  *v1.VirtualMachineInstance
	}{
		{"masquerade", kernelBootVMI("bench-masq", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachPodInterface = nil })},
		{"bridge", bridgeVMI("bench-bridge")},
	}
	for _, b := range bindings {
		plans, err := podnetwork.Plans(b.vmi)
		require.NoError(t, err)
		var took []time.Duration
		for i := range runs {
			t.Run(fmt.Sprintf("%s-%d", b.name, i), func(t *testing.T) {
				n := newPodNetwork(t)
				ns, err := os.Open("/run/netns/" + n.pod)
				require.NoError(t, err)
				defer ns.Close()
				start := time.Now()
				_, err = setup.Pod(context.Background(), ns, plans)
				took = append(took, time.Since(start))
				require.NoError(t, err)
			})
		}
		slices.Sort(took)
		fmt.Printf("network setup per VMI, %s: n=%d median=%.1fms p90=%.1fms min=%.1fms\n", b.name, len(took),
			ms(took[len(took)/2]), ms(took[len(took)*9/10]), ms(took[0]))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
