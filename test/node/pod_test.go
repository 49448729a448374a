//go:build libvirt && cluster

package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/handler/deviceplugin"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestLauncherPodOnLocalCluster runs the node side for real on hack/cluster's node: the
// launcher pod as virt-controller builds it (unprivileged, sockets in an emptyDir)
// with the image of hack/build-node-images.sh, the TUN device from the handler's device
// plugin, and virt-handler's controller (in-process, against an in-process virt-api) that
// sets up the pod network and reports the instance Running. Needs hack/cluster/up.sh and
// hack/build-node-images.sh; KUBECONFIG=_cluster/kubeconfig. Build tag: cluster.
func TestLauncherPodOnLocalCluster(t *testing.T) {
	ctx := context.Background()
	root, _ := filepath.Abs("../..")
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(root, "_cluster", "kubeconfig")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	node := nodes.Items[0].Name

	// kubelet learns devices.kubevirt.io/tun from the handler's device plugin.
	pluginCtx, stopPlugins := context.WithCancel(ctx)
	defer stopPlugins()
	// The node's kubelet root, seen from the host (in the node's mount namespace it is
	// /var/lib/kubelet): the device-plugin socket directory is below it.
	go func() {
		_ = deviceplugin.TUN(filepath.Join(root, "_cluster", "nodes", node, "kubelet", "device-plugins")).Run(pluginCtx)
	}()
	require.Eventually(t, func() bool {
		n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		q := n.Status.Allocatable["devices.kubevirt.io/tun"]
		return err == nil && q.Value() > 0
	}, 60*time.Second, 500*time.Millisecond, "the node never offered devices.kubevirt.io/tun")

	ns := fmt.Sprintf("hangar-node-test-%d", time.Now().Unix()%100000)
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	va := framework.StartVirtAPI(t)
	vmi := kernelBootVMI("podguest", func(v *v1.VirtualMachineInstance) {
		v.Namespace = ns
		v.Spec.Domain.Devices.AutoattachPodInterface = nil
		v.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	})
	vmi.UID = ""
	vmi, err = va.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{})
	require.NoError(t, err)

	cfg := clusterconfig.Defaults()
	cfg.UseEmulation = true
	cfg.LauncherImage = "hangar.local/virt-launcher:dev"
	pod, err := launcherpod.Build(vmi, nil, &cfg)
	require.NoError(t, err)
	// What virt-controller does not do yet: the kernelBoot image's files, the TUN device.
	// The instance lives in an in-process virt-api the cluster's garbage collector cannot see;
	// it would delete a pod owned by it at once.
	pod.OwnerReferences = nil
	c := &pod.Spec.Containers[0]
	c.ImagePullPolicy = corev1.PullNever
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kernel-boot", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(root, "_output", "guest", "kernelboot-rootfs")},
	}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kernel-boot", MountPath: "/var/run/hangar/kernel-boot", ReadOnly: true})
	c.Resources.Requests["devices.kubevirt.io/tun"] = resource.MustParse("1")
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits["devices.kubevirt.io/tun"] = resource.MustParse("1")
	c.Args = []string{"-v=2"}
	created, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(ns).Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		waitPodGone(t, kube, ns, created.Name)
	})
	t0 := time.Now()

	var podIP string
	for deadline := time.Now().Add(90 * time.Second); ; {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		podIP = p.Status.PodIP
		if p.Status.Phase == corev1.PodRunning && podIP != "" {
			break
		}
		if p.Status.Phase == corev1.PodFailed || time.Now().After(deadline) {
			events, _ := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			var msgs []string
			for _, e := range events.Items {
				msgs = append(msgs, e.Reason+": "+e.Message)
			}
			logs, _ := kube.CoreV1().Pods(ns).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			t.Fatalf("launcher pod not running: %s\nevents:\n%s\nlog:\n%s", p.Status.Phase, strings.Join(msgs, "\n"), logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pod created -> running: %s", time.Since(t0))

	vmi.Status.Phase, vmi.Status.NodeName = v1.Scheduled, node
	vmi.Status.ActivePods = map[types.UID]string{created.UID: node}
	_, err = va.Client.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	pods, err := podsockets.OpenRoot(filepath.Join(root, "_cluster", "nodes", node, "kubelet", "pods"))
	require.NoError(t, err)
	defer pods.Close()
	h := handler.NewController(handler.Config{NodeName: node, Pods: pods, SetupNetwork: true}, va.Client)
	hctx, stopHandler := context.WithCancel(ctx)
	defer stopHandler()
	go func() { _ = h.Run(hctx, 2) }()

	got := waitVMIWithLogs(t, va, vmi, kube, created.Name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	t.Logf("pod created -> instance Running: %s", time.Since(t0))
	if logs, err := kube.CoreV1().Pods(ns).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
		for _, l := range strings.Split(string(logs), "\n") {
			if strings.Contains(l, "guest.go") || strings.Contains(l, "launcher.go") {
				t.Log(l)
			}
		}
	}
	require.Len(t, got.Status.Interfaces, 1)
	assert.Equal(t, podIP, got.Status.Interfaces[0].IP)

	// The guest, through the relay in the shared directory, answers; its DHCP lease came
	// from the launcher in the pod.
	dir, err := pods.Dir(created.UID, layout.SocketVolume)
	require.NoError(t, err)
	defer dir.Close()
	console, err := dir.Dial(api.ConsoleSocketName)
	require.NoError(t, err)
	defer console.Close()
	deadline := time.Now().Add(120 * time.Second)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "lease=10.0.2.2") {
		_, err := console.Write([]byte("echo lease=$(ip -4 -o addr show eth0 | grep -o '10.0.2.2')\n"))
		require.NoError(t, err)
		_ = console.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 4096)
		n, _ := console.Read(b)
		seen.Write(b[:n])
		require.True(t, time.Now().Before(deadline), "console: %q", seen.String())
	}
	t.Logf("pod created -> guest shell with its DHCP lease: %s", time.Since(t0))
	logPodMemory(t, string(created.UID))

	// The pod's address forwards to the guest.
	_, err = console.Write([]byte("nc -l -p 8080 -e echo hello-from-the-guest &\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(podIP, "8080"), 2*time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(conn)
		return string(b) == "hello-from-the-guest\n"
	}, 30*time.Second, 300*time.Millisecond)

	// Deleting the pod: kubelet's SIGTERM makes the launcher stop the guest (it ignores
	// ACPI, so after the instance's grace period) and the handler reports the end.
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, created.Name, metav1.DeleteOptions{}))
	lastLogs := make(chan string, 1)
	go func() {
		var last []byte
		for i := 0; i < 120; i++ {
			if logs, err := kube.CoreV1().Pods(ns).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
				last = logs
			} else {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		lastLogs <- string(last)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("launcher log during deletion:\n%s", <-lastLogs)
		}
	}()
	got = waitVMIWithLogs(t, va, vmi, kube, created.Name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Succeeded })
	assert.Equal(t, "Stopped", got.Status.Reason)
}

func waitVMIWithLogs(t *testing.T, va *framework.VirtAPI, vmi *v1.VirtualMachineInstance, kube kubernetes.Interface, pod string, timeout time.Duration, cond func(*v1.VirtualMachineInstance) bool) *v1.VirtualMachineInstance {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := va.Client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Get(context.Background(), vmi.Name, metav1.GetOptions{})
		require.NoError(t, err)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			logs, _ := kube.CoreV1().Pods(vmi.Namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
			t.Fatalf("instance status %+v\nlauncher log:\n%s", got.Status, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitPodGone(t *testing.T, kube kubernetes.Interface, ns, name string) {
	for i := 0; i < 120; i++ {
		if _, err := kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("pod %s/%s still there", ns, name)
}

// logPodMemory logs the pod's memory working set (cgroup v1: usage minus inactive file
// pages, as kubelet counts it), for virt-controller's memory overhead.
func logPodMemory(t *testing.T, podUID string) {
	for _, qos := range []string{"burstable", "besteffort", ""} {
		dir := filepath.Join("/sys/fs/cgroup/memory/kubepods", qos, "pod"+podUID)
		usage, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(dir, "memory.stat"))
		var used, inactive, rss int64
		fmt.Sscan(strings.TrimSpace(string(usage)), &used)
		for _, line := range strings.Split(string(stat), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "total_inactive_file" {
				fmt.Sscan(f[1], &inactive)
			}
			if len(f) == 2 && f[0] == "total_rss" {
				fmt.Sscan(f[1], &rss)
			}
		}
		t.Logf("launcher pod memory: working set %d MiB, rss %d MiB (guest memory 128 MiB)", (used-inactive)>>20, rss>>20)
		return
	}
	t.Logf("no memory cgroup found for pod %s", podUID)
}
