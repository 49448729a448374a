//go:build libvirt

package node

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/test/integration/framework"
)

const nodeName = "node-test"

// runHandler runs virt-handler's controller in-process, on the emulated node's pods
// directory, until the returned stop is called.
func runHandler(t *testing.T, va *framework.VirtAPI) (stop func()) {
	stop, _ = runHandlerWith(t, va, handler.Config{NodeName: nodeName, Pods: testNode(t).pods})
	return stop
}

func runHandlerWith(t *testing.T, va *framework.VirtAPI, cfg handler.Config) (stop func(), c *handler.Controller) {
	c = handler.NewController(cfg, va.Client)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop, c
}

func waitVMI(t *testing.T, va *framework.VirtAPI, vmi *v1.VirtualMachineInstance, timeout time.Duration, cond func(*v1.VirtualMachineInstance) bool) *v1.VirtualMachineInstance {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := va.Client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Get(context.Background(), vmi.Name, metav1.GetOptions{})
		require.NoError(t, err)
		if cond(got) {
			return got
		}
		require.True(t, time.Now().Before(deadline), "instance status: %+v", got.Status)
		time.Sleep(20 * time.Millisecond)
	}
}

func readyStatus(v *v1.VirtualMachineInstance) corev1.ConditionStatus {
	for _, c := range v.Status.Conditions {
		if c.Type == v1.VirtualMachineInstanceReady {
			return c.Status
		}
	}
	return ""
}

// TestHandlerRunsInstanceSurvivesRestartAndReportsPowerOff drives a real launcher through
// virt-handler against a real virt-api: Scheduled → Running, a handler restart that
// leaves the guest alone, and Succeeded when the guest powers off.
// scheduledInstance creates want in virt-api and marks it Scheduled to this node with a
// launcher pod, as virt-controller does once the launcher pod is bound; it returns the stored
// instance and the launcher pod's UID.
func scheduledInstance(t *testing.T, va *framework.VirtAPI, want *v1.VirtualMachineInstance) (*v1.VirtualMachineInstance, types.UID) {
	ctx := context.Background()
	vmis := va.Client.KubevirtV1().VirtualMachineInstances(want.Namespace)
	want.UID = ""
	vmi, err := vmis.Create(ctx, want, metav1.CreateOptions{})
	require.NoError(t, err)
	podUID := types.UID(uuid.NewUUID())
	vmi.Status.Phase, vmi.Status.NodeName = v1.Scheduled, nodeName
	vmi.Status.ActivePods = map[types.UID]string{podUID: nodeName}
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	return vmi, podUID
}

func TestHandlerRunsInstanceSurvivesRestartAndReportsPowerOff(t *testing.T) {
	va := framework.StartVirtAPI(t)
	vmi, podUID := scheduledInstance(t, va, kernelBootVMI("handled"))
	r := startLauncherWith(t, launcherOptions{podUID: podUID}, vmi)
	r.start = time.Now()
	stop, controller := runHandlerWith(t, va, handler.Config{NodeName: nodeName, Pods: testNode(t).pods})
	handlerURL, certs := serveHandler(t, controller)

	got := waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running // Ready is virt-controller's (none runs here)
	})
	t.Logf("handler start -> Running: %s", time.Since(r.start))
	took := r.waitConsoleLog(banner+" hostname=handled", 120*time.Second)
	t.Logf("handler start -> banner: %s", took)
	writeFigure(t, "handler-start-to-banner", took)
	assert.Empty(t, got.Status.Interfaces)

	// virt-api's side: its node client (pkg/nodeclient) pauses and unpauses through the
	// handler's HTTPS server, and a websocket reaches the serial console and VNC.
	nodes, err := nodeclient.New(nodeclient.Config{StaticAddress: handlerURL, CAFile: certs.ca, CertFile: certs.cert, KeyFile: certs.key}, nil)
	require.NoError(t, err)
	require.NoError(t, nodes.Put(context.Background(), nodeName, vmi.Namespace, vmi.Name, "pause"))
	waitVMI(t, va, vmi, 10*time.Second, func(v *v1.VirtualMachineInstance) bool { return hasCondition(v, v1.VirtualMachineInstancePaused) })
	err = nodes.Put(context.Background(), nodeName, vmi.Namespace, vmi.Name, "pause")
	var handlerErr *nodeclient.HandlerError
	require.ErrorAs(t, err, &handlerErr, "pausing a paused guest")
	assert.Equal(t, 409, handlerErr.Code)
	require.NoError(t, nodes.Put(context.Background(), nodeName, vmi.Namespace, vmi.Name, "unpause"))
	waitVMI(t, va, vmi, 10*time.Second, func(v *v1.VirtualMachineInstance) bool { return !hasCondition(v, v1.VirtualMachineInstancePaused) })

	// Dialled by address, checked as the node's identity, as virt-api's streams are.
	wsTLS := nodes.Transport().TLSClientConfig.Clone()
	wsTLS.ServerName = nodeName
	dialer := websocket.Dialer{TLSClientConfig: wsTLS, Subprotocols: []string{"plain.kubevirt.io"}}
	wsBase := "wss" + strings.TrimPrefix(handlerURL, "https") + "/v1/namespaces/" + vmi.Namespace + "/virtualmachineinstances/" + vmi.Name
	console, _, err := dialer.Dial(wsBase+"/console", nil)
	require.NoError(t, err)
	var seen strings.Builder
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(seen.String(), "hangar-ws-7"); {
		require.NoError(t, console.WriteMessage(websocket.BinaryMessage, []byte("echo hangar-ws-$((3+4))\n")))
		_ = console.SetReadDeadline(time.Now().Add(time.Second))
		if _, b, err := console.ReadMessage(); err == nil {
			seen.Write(b)
		}
		require.True(t, time.Now().Before(deadline), "console over websocket: %q", seen.String())
	}
	console.Close()
	vnc, _, err := dialer.Dial(wsBase+"/vnc", nil)
	require.NoError(t, err)
	_ = vnc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, greeting, err := vnc.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "RFB 003.008\n", string(greeting))
	vnc.Close()

	// A new handler adopts the running guest without touching it.
	qemu := r.qemuPid()
	stop()
	runHandler(t, va)
	time.Sleep(2 * time.Second)
	got = waitVMI(t, va, vmi, 10*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, qemu, r.qemuPid(), "same QEMU after the handler restart")

	c := r.console()
	r.typeLine(c, "poweroff -f")
	got = waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Succeeded })
	assert.Equal(t, "GuestShutdown", got.Status.Reason)
	assert.Equal(t, corev1.ConditionFalse, readyStatus(got))
	r.waitExit(30 * time.Second)
}

// TestHandlerSetsUpPodNetwork runs the launcher in a pod-like network namespace without
// network privileges of its own: the handler finds it through its socket's verified peer and
// sets up bridge, tap and NAT in its namespace before Sync, as in a real launcher pod.
func TestHandlerSetsUpPodNetwork(t *testing.T) {
	va := framework.StartVirtAPI(t)
	n := newPodNetwork(t)
	vmi, podUID := scheduledInstance(t, va, kernelBootVMI("netpod", func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.AutoattachPodInterface = nil
	}))
	r := startLauncherWith(t, launcherOptions{podUID: podUID, netns: n.pod}, vmi)
	r.start = time.Now()
	runHandlerWith(t, va, handler.Config{NodeName: nodeName, Pods: testNode(t).pods, SetupNetwork: true})

	got := waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	require.Len(t, got.Status.Interfaces, 1)
	assert.Equal(t, "10.99.0.2", got.Status.Interfaces[0].IP)
	assert.Equal(t, "eth0", got.Status.Interfaces[0].PodInterfaceName)
	assert.Regexp(t, "^52:54:00:", got.Status.Interfaces[0].MAC)
	r.waitConsoleLog("HANGAR-GUEST-NET eth0 ip=10.0.2.2/24 router=10.0.2.1", 120*time.Second)

	c := r.console()
	r.typeLine(c, "poweroff -f")
	waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Succeeded })
	r.waitExit(30 * time.Second)
}

func hasCondition(v *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) bool {
	for _, c := range v.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

type handlerCerts struct{ ca, cert, key string }

// serveHandler serves virt-handler's HTTPS API for c on a loopback port, with the node's
// identity as virt-controller's signer issues it, and returns its URL and virt-api's client
// files.
func serveHandler(t *testing.T, c *handler.Controller) (string, handlerCerts) {
	dir := t.TempDir()
	ca, err := framework.NewCA(dir, "handler-test-ca")
	require.NoError(t, err)
	serving, err := ca.NodeIdentity("handler", nodeName)
	require.NoError(t, err)
	client, err := ca.ClientCert("virt-api", "virt-api")
	require.NoError(t, err)
	tlsCfg, err := handler.TLSConfig(serving.CertFile, serving.KeyFile, ca.CertFile)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: (&handler.Server{Lister: c.Lister(), Sockets: &handler.Sockets{Pods: testNode(t).pods, NodeName: nodeName}, AllowedNames: []string{"virt-api"}}).Handler(), TLSConfig: tlsCfg}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String(), handlerCerts{ca: ca.CertFile, cert: client.CertFile, key: client.KeyFile}
}
