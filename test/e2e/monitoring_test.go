//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestMonitoring: a real Prometheus scrapes virt-api, virt-handler and virt-controller with a
// token allowed to get /metrics, as the PodMonitors do; a guest's per-VMI series rise after it
// ran a CPU and a disk load; the rules load and evaluate, and KubeVirt's recording rules record
// the cluster's figures; every query of the Grafana dashboard returns data for the VM; the
// lifecycle shows in the instance's events. Whoever lacks the right gets nothing.
func TestMonitoring(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-monitoring")
	waitForDefaultServiceAccount(t, ns)

	// promtool's checks and unit tests of the rules run without a cluster (artifacts/monitoring).
	reader := serviceAccountToken(t, ns, "prometheus", true)
	t.Run("metrics only for callers allowed to get /metrics", func(t *testing.T) {
		stranger := serviceAccountToken(t, ns, "stranger", false)
		for _, component := range []string{"virt-handler", "virt-controller"} {
			for _, p := range componentPods(t, component) {
				status, _, err := getMetrics(p.Status.PodIP, "")
				require.NoError(t, err)
				assert.Equal(t, http.StatusUnauthorized, status, "%s without a token", p.Name)
				status, _, err = getMetrics(p.Status.PodIP, "forged."+reader[:10])
				require.NoError(t, err)
				assert.Equal(t, http.StatusUnauthorized, status, "%s with a forged token", p.Name)
				status, body, err := getMetrics(p.Status.PodIP, stranger)
				require.NoError(t, err)
				assert.Equal(t, http.StatusForbidden, status, "%s with a token that may not get /metrics", p.Name)
				assert.NotContains(t, body, "kubevirt_")
				status, body, err = getMetrics(p.Status.PodIP, reader)
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, status, "%s for the metrics reader", p.Name)
				assert.Contains(t, body, "# TYPE")
			}
		}
		// virt-api is an API server: its /metrics are authorized as every request of it is.
		for _, p := range componentPods(t, "virt-api") {
			status, body, err := getMetrics(p.Status.PodIP, stranger)
			require.NoError(t, err)
			assert.Equal(t, http.StatusForbidden, status, "%s with a token that may not get /metrics", p.Name)
			assert.NotContains(t, body, "apiserver_request_total")
			status, body, err = getMetrics(p.Status.PodIP, reader)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status, "%s for the metrics reader", p.Name)
			assert.Contains(t, body, "apiserver_request_total")
		}
	})

	prom := startPrometheus(t, reader, 2*time.Second)
	require.Eventually(t, func() bool {
		up, err := prom.query(`up{job=~"hangar-.*"} == 1`)
		return err == nil && len(up) == len(componentPods(t, "virt-handler"))+len(componentPods(t, "virt-controller"))+len(componentPods(t, "virt-api"))
	}, 60*time.Second, time.Second, "every virt-api, virt-handler and virt-controller is up in Prometheus")

	// A VM (so kubevirt_vm_info has it) with an empty disk to load.
	spec := guestSpec()
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "scratch", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("32Mi")}}}}
	const name = "watched"
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	console := attach(t, ns, name, "console")
	vmi := waitVMI(t, ns, name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console.waitFor(t, banner, 90*time.Second)

	sel := fmt.Sprintf(`{namespace=%q,name=%q}`, ns, name)
	var cpu0, write0, writeOps0, read0 float64
	require.Eventually(t, func() bool {
		var ok [4]bool
		cpu0, ok[0] = prom.value("kubevirt_vmi_cpu_usage_seconds_total" + sel)
		write0, ok[1] = prom.value("kubevirt_vmi_storage_write_traffic_bytes_total" + sel)
		writeOps0, ok[2] = prom.value("kubevirt_vmi_storage_iops_write_total" + sel)
		read0, ok[3] = prom.value("kubevirt_vmi_storage_read_traffic_bytes_total" + sel)
		return ok[0] && ok[1] && ok[2] && ok[3]
	}, 60*time.Second, time.Second, "the guest's series in Prometheus")
	r, err := prom.query("kubevirt_vmi_cpu_usage_seconds_total" + sel)
	require.NoError(t, err)
	assert.Equal(t, vmi.Status.NodeName, r[0].Metric["node"], "reported by the handler of the guest's node")

	// The load: 10 s of a busy shell, then 16 MiB written to the disk and read back past the
	// guest's page cache.
	console.typeUntil(t, loadDiskDrivers+"; "+
		"echo disk-$(cat /sys/block/vda/size)", "disk-65536")
	console.typeUntil(t, "end=$(($(date +%s)+10)); while [ $(date +%s) -lt $end ]; do :; done; echo busy-$((3*3))", "busy-9")
	console.typeUntil(t, "dd if=/dev/urandom of=/dev/vda bs=1M count=16 conv=fsync 2>/dev/null; echo 3 > /proc/sys/vm/drop_caches; "+
		"dd if=/dev/vda of=/dev/null bs=1M count=16 2>/dev/null; echo io-$((4*4))", "io-16")

	rose := func(metric string, before, by float64) func() bool {
		return func() bool {
			v, ok := prom.value(metric + sel)
			return ok && v >= before+by
		}
	}
	require.Eventually(t, rose("kubevirt_vmi_cpu_usage_seconds_total", cpu0, 3), 30*time.Second, time.Second, "CPU time rose by 3 s")
	require.Eventually(t, rose("kubevirt_vmi_storage_write_traffic_bytes_total", write0, 16<<20), 30*time.Second, time.Second, "16 MiB written")
	require.Eventually(t, rose("kubevirt_vmi_storage_iops_write_total", writeOps0, 16), 30*time.Second, time.Second, "write operations")
	require.Eventually(t, rose("kubevirt_vmi_storage_read_traffic_bytes_total", read0, 8<<20), 30*time.Second, time.Second, "reads past the page cache")
	for _, q := range []string{"kubevirt_vmi_vcpu_seconds_total", "kubevirt_vmi_memory_resident_bytes", "kubevirt_vmi_memory_domain_bytes",
		"kubevirt_vmi_network_receive_bytes_total", "kubevirt_vmi_network_transmit_bytes_total",
		"kubevirt_vmi_network_receive_packets_total", "kubevirt_vmi_network_transmit_packets_total", "kubevirt_vmi_info"} {
		r, err := prom.query(q + sel)
		require.NoError(t, err)
		assert.NotEmpty(t, r, q)
	}
	v, _ := prom.value("kubevirt_vmi_memory_domain_bytes" + sel)
	assert.Equal(t, float64(128<<20), v, "the memory the guest was given")

	t.Run("every dashboard query returns data", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "artifacts/monitoring/grafana-dashboard.json"))
		require.NoError(t, err)
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard parses")
		queries := 0
		grafana := strings.NewReplacer("$namespace", ns, "$name", name, "$__rate_interval", "5m")
		for _, p := range dash.Panels {
			for _, target := range p.Targets {
				q := grafana.Replace(target.Expr)
				queries++
				var got []sample
				assert.Eventually(t, func() bool {
					got, err = prom.query(q)
					return err == nil && len(got) > 0
				}, 30*time.Second, time.Second, "panel %q: %s: %v", p.Title, q, err)
			}
		}
		assert.GreaterOrEqual(t, queries, 15)
	})

	t.Run("the rules evaluate", func(t *testing.T) {
		want := ruleCount(t)
		assert.Eventually(t, func() bool {
			health, err := prom.ruleHealth()
			if err != nil || len(health) < want {
				return false
			}
			for rule, h := range health {
				if h != "ok" {
					t.Logf("rule %s: %s", rule, h)
					return false
				}
			}
			return true
		}, 30*time.Second, time.Second, "%d rules", want)
		firing, err := prom.query(`ALERTS{alertstate="firing", alertname=~"Hangar(VirtHandlerDown|NoVirtHandler|NoReadyVirtController|NoLeadingVirtController|APIServiceUnavailable)"}`)
		require.NoError(t, err)
		assert.Empty(t, firing, "a healthy cluster fires no component alert")
	})

	t.Run("KubeVirt's recording rules record the cluster", func(t *testing.T) {
		for q, want := range map[string]float64{
			"kubevirt_virt_api_up":                           float64(len(componentPods(t, "virt-api"))),
			"cluster:kubevirt_virt_controller_up:sum":        float64(len(componentPods(t, "virt-controller"))),
			"kubevirt_virt_handler_up":                       float64(len(componentPods(t, "virt-handler"))),
			`kubevirt_number_of_vms{namespace="` + ns + `"}`: 1,
			`vmi:kubevirt_vmi_vcpu:count` + sel:              1,
		} {
			var got float64
			assert.Eventually(t, func() bool {
				var ok bool
				got, ok = prom.value(q)
				return ok && got == want
			}, 30*time.Second, time.Second, "%s: %v, want %v", q, got, want)
		}
		running, ok := prom.value(`sum(node:kubevirt_vmi_phase:sum{phase="running"})`)
		assert.True(t, ok)
		assert.GreaterOrEqual(t, running, 1.0, "the guest counts among the running instances")
	})

	t.Run("the lifecycle in the instance's events", func(t *testing.T) {
		vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
		_, err := vmis.Pause(ctx, name, &v1.PauseOptions{}, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitVMI(t, ns, name, 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return condition(v, v1.VirtualMachineInstancePaused) != nil })
		_, err = vmis.Unpause(ctx, name, &v1.UnpauseOptions{}, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitVMI(t, ns, name, 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return condition(v, v1.VirtualMachineInstancePaused) == nil })
		require.Eventually(t, func() bool {
			out, err := kubectl(t, "describe", "vmi", name, "-n", ns)
			return err == nil && strings.Contains(out, "VirtualMachineInstance started.") &&
				strings.Contains(out, "VirtualMachineInstance paused.") && strings.Contains(out, "VirtualMachineInstance unpaused.")
		}, 20*time.Second, 500*time.Millisecond, "kubectl describe vmi shows Started, Paused and Resumed")

		_, err = hangar.KubevirtV1().VirtualMachines(ns).Stop(ctx, name, &v1.StopOptions{}, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=VirtualMachineInstance,involvedObject.name=" + name + ",reason=Stopped"})
			return err == nil && len(events.Items) > 0
		}, 60*time.Second, 500*time.Millisecond, "a Stopped event when the guest shut down")
	})
}

// TestContainerDiskWithoutDisk: an instance whose containerDisk image holds no disk fails with
// a reason and a message that name the image and the missing disk, in its status and an event.
func TestContainerDiskWithoutDisk(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-nodisk")
	waitForDefaultServiceAccount(t, ns)
	// The kernelBoot guest's image has a kernel and an initrd, and nothing under /disk.
	spec := guestSpec()
	spec.Domain.Firmware = nil
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{
		Image: guestImage, ImagePullPolicy: corev1.PullNever}}}}
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "nodisk"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)

	vmi := waitVMI(t, ns, "nodisk", 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Failed })
	assert.Equal(t, "ContainerDiskNotFound", vmi.Status.Reason)
	c := condition(vmi, v1.VirtualMachineInstanceSynchronized)
	require.NotNil(t, c, "the Synchronized condition says why: %+v", vmi.Status)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
	assert.Contains(t, c.Message, `"`+guestImage+`"`)
	assert.Contains(t, c.Message, "holds no disk")
	assert.Contains(t, c.Message, "/disk/")
	require.Eventually(t, func() bool {
		out, err := kubectl(t, "describe", "vmi", "nodisk", "-n", ns)
		return err == nil && strings.Contains(out, "VirtualMachineInstance failed: ContainerDiskNotFound") && strings.Contains(out, guestImage)
	}, 20*time.Second, 500*time.Millisecond, "kubectl describe vmi shows the failure and its reason")
}
