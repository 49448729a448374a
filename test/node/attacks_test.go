//go:build libvirt

package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestTenantCannotRedirectTheHandler plays a tenant who may exec into their launcher
// container (the edit role grants pods/exec) and rewrites its socket volume so that the
// privileged virt-handler would connect them elsewhere: to another tenant's guest console, to
// a socket of the node, to another tenant's launcher. Two real launchers and guests run for
// two tenants; virt-api reaches the handler through its HTTPS server, as in a cluster. Every
// attempt is refused with an error, nothing but the tenant's own launcher is ever reached,
// and the tenant's own streams work again once the volume holds the launcher's sockets.
func TestTenantCannotRedirectTheHandler(t *testing.T) {
	va := framework.StartVirtAPI(t)
	n := testNode(t)
	vmiA, podA := scheduledInstance(t, va, kernelBootVMI("tenant-a"))
	vmiB, podB := scheduledInstance(t, va, kernelBootVMI("tenant-b"))
	a := startLauncherWith(t, launcherOptions{podUID: podA}, vmiA)
	b := startLauncherWith(t, launcherOptions{podUID: podB}, vmiB)
	_, controller := runHandlerWith(t, va, handler.Config{NodeName: nodeName, Pods: n.pods})
	handlerURL, certs := serveHandler(t, controller)
	for _, vmi := range []*v1.VirtualMachineInstance{vmiA, vmiB} {
		waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return v.Status.Phase == v1.Running // Ready is virt-controller's (none runs here)
		})
	}
	a.waitConsoleLog(banner+" hostname=tenant-a", 120*time.Second)
	b.waitConsoleLog(banner+" hostname=tenant-b", 120*time.Second)

	nodes, err := nodeclient.New(nodeclient.Config{StaticAddress: handlerURL, CAFile: certs.ca, CertFile: certs.cert, KeyFile: certs.key}, nil)
	require.NoError(t, err)
	// Dialled by address, checked as the node's identity, as virt-api's streams are.
	wsTLS := nodes.Transport().TLSClientConfig.Clone()
	wsTLS.ServerName = nodeName
	dialer := websocket.Dialer{TLSClientConfig: wsTLS, Subprotocols: []string{"plain.kubevirt.io"}}
	stream := func(vmi *v1.VirtualMachineInstance, what string) (*websocket.Conn, *http.Response, error) {
		return dialer.Dial("wss"+strings.TrimPrefix(handlerURL, "https")+"/v1/namespaces/"+vmi.Namespace+"/virtualmachineinstances/"+vmi.Name+"/"+what, nil)
	}
	refused := func(t *testing.T, what string) {
		t.Helper()
		ws, resp, err := stream(vmiA, what)
		if err == nil {
			ws.Close()
			t.Fatalf("the handler opened %s of tenant A's instance onto a planted socket", what)
		}
		require.NotNil(t, resp, "an HTTP answer, not a dropped connection: %v", err)
		body, _ := io.ReadAll(resp.Body)
		assert.GreaterOrEqual(t, resp.StatusCode, 400, "%s", body)
		t.Logf("%s refused: %d %s", what, resp.StatusCode, strings.TrimSpace(string(body)))
	}

	// A socket of the node: anything that connects to it is a breach.
	hostDir, err := os.MkdirTemp("", "host")
	require.NoError(t, err)
	defer os.RemoveAll(hostDir)
	hostSocket := filepath.Join(hostDir, "runtime.sock")
	host, err := net.Listen("unix", hostSocket)
	require.NoError(t, err)
	defer host.Close()
	var breaches atomic.Int32
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			breaches.Add(1)
			c.Close()
		}
	}()

	// Tenant B holds their own console; a breach would take it over (the newest client wins).
	consoleB := b.console()

	volA := n.socketVolume(podA)
	plant := func(t *testing.T, name, how string, make func(path string) error) {
		t.Helper()
		path := filepath.Join(volA, name)
		require.NoError(t, os.Rename(path, path+".orig"))
		t.Cleanup(func() {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Rename(path+".orig", path))
		})
		require.NoError(t, make(path), how)
	}

	t.Run("console: relative symlink to another tenant's console", func(t *testing.T) {
		target := filepath.Join("..", "..", "..", "..", string(podB), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume, api.ConsoleSocketName)
		plant(t, api.ConsoleSocketName, "relative link", func(p string) error { return os.Symlink(target, p) })
		refused(t, "console")
	})
	t.Run("console: absolute symlink to another tenant's console", func(t *testing.T) {
		target := filepath.Join(n.socketVolume(podB), api.ConsoleSocketName)
		plant(t, api.ConsoleSocketName, "absolute link", func(p string) error { return os.Symlink(target, p) })
		refused(t, "console")
	})
	t.Run("vnc: symlink through /proc/<pid>/root to a socket of the node", func(t *testing.T) {
		target := fmt.Sprintf("/proc/%d/root%s", os.Getpid(), hostSocket)
		plant(t, api.VNCSocketName, "magic link", func(p string) error { return os.Symlink(target, p) })
		refused(t, "vnc")
	})
	t.Run("vnc: absolute symlink to a socket of the node", func(t *testing.T) {
		plant(t, api.VNCSocketName, "absolute link", func(p string) error { return os.Symlink(hostSocket, p) })
		refused(t, "vnc")
	})
	t.Run("launcher: a socket of the node in place of the launcher's", func(t *testing.T) {
		plant(t, api.SocketName, "absolute link", func(p string) error { return os.Symlink(hostSocket, p) })
		require.Error(t, nodes.Put(context.Background(), nodeName, vmiA.Namespace, vmiA.Name, "unpause"))
	})

	assert.Zero(t, breaches.Load(), "connections that reached the node's socket")
	// Tenant B's console was never even connected to: it still answers its own client.
	b.typeLine(consoleB, "echo still-b-$((40+2))")
	expect(t, consoleB, "still-b-42", 30*time.Second)

	// A hard link to another pod's socket cannot be made from inside a pod (the other pod's
	// volume is not in its mount namespace); root plants them here to test the second line of
	// defence: the connection reaches a process of another pod, which the peer check refuses
	// before anything is sent. (A console relay sees that connection come and go.)
	t.Run("console: hard link to another tenant's console socket", func(t *testing.T) {
		target := filepath.Join(n.socketVolume(podB), api.ConsoleSocketName)
		plant(t, api.ConsoleSocketName, "hard link", func(p string) error { return os.Link(target, p) })
		refused(t, "console")
	})
	t.Run("launcher: hard link to another tenant's launcher socket", func(t *testing.T) {
		target := filepath.Join(n.socketVolume(podB), api.SocketName)
		plant(t, api.SocketName, "hard link", func(p string) error { return os.Link(target, p) })
		err := nodes.Put(context.Background(), nodeName, vmiA.Namespace, vmiA.Name, "pause")
		require.Error(t, err, "pausing through a planted launcher socket")
		t.Logf("pause refused: %v", err)
		time.Sleep(500 * time.Millisecond)
		assert.Equal(t, api.PhaseRunning, b.State().Phase, "tenant B's guest was not paused")
		assert.Equal(t, api.PhaseRunning, a.State().Phase)
	})

	// With the launcher's own sockets back, tenant A's streams work: the refusals above came
	// from the planted files, not from a broken handler.
	ws, _, err := stream(vmiA, "console")
	require.NoError(t, err)
	defer ws.Close()
	var seen strings.Builder
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(seen.String(), "hangar-a-7"); {
		require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("echo hangar-a-$((3+4))\n")))
		_ = ws.SetReadDeadline(time.Now().Add(time.Second))
		if _, msg, err := ws.ReadMessage(); err == nil {
			seen.Write(msg)
		}
		require.True(t, time.Now().Before(deadline), "tenant A's console: %q", seen.String())
	}
	require.NoError(t, nodes.Put(context.Background(), nodeName, vmiA.Namespace, vmiA.Name, "pause"))
	a.waitPhase(api.PhasePaused, 10*time.Second)
}
