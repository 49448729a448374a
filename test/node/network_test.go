//go:build libvirt

package node

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/setup"
)

// podNetwork is a stand-in for a launcher pod's network: namespace pod with eth0 =
// 10.99.0.2/24 and a default route to namespace out (10.99.0.1), the "rest of the cluster".
type podNetwork struct {
	pod, out string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

func newPodNetwork(t *testing.T) podNetwork {
	id := fmt.Sprintf("%s-%04x", runID, rand.IntN(1<<16))
	n := podNetwork{pod: "hangar-test-pod-" + id, out: "hangar-test-out-" + id}
	ipCmd(t, "netns", "add", n.pod)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.pod).Run() })
	ipCmd(t, "netns", "add", n.out)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.out).Run() })
	ipCmd(t, "-n", n.pod, "link", "add", "eth0", "type", "veth", "peer", "name", "veth-out", "netns", n.out)
	ipCmd(t, "-n", n.pod, "addr", "add", "10.99.0.2/24", "dev", "eth0")
	ipCmd(t, "-n", n.pod, "link", "set", "eth0", "up")
	ipCmd(t, "-n", n.pod, "link", "set", "lo", "up")
	ipCmd(t, "-n", n.pod, "route", "add", "default", "via", "10.99.0.1")
	ipCmd(t, "-n", n.out, "addr", "add", "10.99.0.1/24", "dev", "veth-out")
	ipCmd(t, "-n", n.out, "link", "set", "veth-out", "up")
	return n
}

// setup does what virt-handler does before Sync: the pod side of vmi's interfaces, from
// outside the pod's namespace, through an open descriptor of it.
func (n podNetwork) setup(t *testing.T, vmi *v1.VirtualMachineInstance) []podnetwork.Attachment {
	t.Helper()
	plans, err := podnetwork.Plans(vmi)
	require.NoError(t, err)
	ns, err := os.Open("/run/netns/" + n.pod)
	require.NoError(t, err)
	defer ns.Close()
	atts, err := setup.Pod(context.Background(), ns, plans)
	require.NoError(t, err)
	return atts
}

// inNetns runs f on an OS thread that has entered the named network namespace; sockets
// created there stay in it.
func inNetns(t *testing.T, name string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	self, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(target)
	require.NoError(t, unix.Setns(target, unix.CLONE_NEWNET))
	defer func() {
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // else the thread dies with the goroutine
		}
	}()
	f()
}

// typeLine types a command on the guest's console.
func (r *launcherRun) typeLine(c net.Conn, line string) {
	_, err := c.Write([]byte(line + "\n"))
	require.NoError(r.t, err)
}

func TestMasqueradeDHCPEgressAndPortForward(t *testing.T) {
	n := newPodNetwork(t)
	vmi := kernelBootVMI("net", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachPodInterface = nil })
	n.setup(t, vmi)
	r := startLauncherWith(t, launcherOptions{netns: n.pod}, vmi)
	s := r.sync()
	require.Len(t, s.Interfaces, 1)
	assert.Equal(t, "10.99.0.2", s.Interfaces[0].IP)
	assert.Equal(t, "10.0.2.2", s.Interfaces[0].GuestIP)
	assert.Equal(t, "eth0", s.Interfaces[0].PodInterfaceName)

	// DHCP from the launcher: the test guest prints its lease.
	took := r.waitConsoleLog("HANGAR-GUEST-NET eth0 ip=10.0.2.2/24 router=10.0.2.1", 120*time.Second)
	t.Logf("sync -> guest DHCP lease: %s", took)

	var ln net.Listener
	inNetns(t, n.out, func() {
		var err error
		ln, err = net.Listen("tcp", "10.99.0.1:7000")
		require.NoError(t, err)
	})
	defer ln.Close()

	c := r.console()
	// Egress leaves with the pod's address.
	r.typeLine(c, "echo hello-out | nc 10.99.0.1 7000")
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(30*time.Second)))
	conn, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, "10.99.0.2", conn.RemoteAddr().(*net.TCPAddr).IP.String(), "masqueraded to the pod's address")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "hello-out\n", string(got))
	conn.Close()

	// Ingress: the pod's address forwards to the guest (every port: none declared).
	r.typeLine(c, "nc -l -p 8080 -e echo hello-in &")
	n.waitForGuestAnswer(t, "hello-in\n")
}

// TestNetworkSetupErrorsNameTheLink: a setup that fails says which link and what failed.
func TestNetworkSetupErrorsNameTheLink(t *testing.T) {
	n := newPodNetwork(t)
	// A link that has the bridge's name and is no bridge.
	ipCmd(t, "-n", n.pod, "link", "add", "hangar-br0", "type", "veth", "peer", "name", "other")
	for _, vmi := range []*v1.VirtualMachineInstance{
		kernelBootVMI("masq", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachPodInterface = nil }),
		bridgeVMI("bridge"),
	} {
		plans, err := podnetwork.Plans(vmi)
		require.NoError(t, err)
		ns, err := os.Open("/run/netns/" + n.pod)
		require.NoError(t, err)
		_, err = setup.Pod(context.Background(), ns, plans)
		ns.Close()
		assert.EqualError(t, err, "interface default: link hangar-br0: a veth, not a bridge", vmi.Name)
	}
}

// waitForGuestAnswer connects from outside the pod to the pod's address, port 8080, until
// the guest's listener there answers want.
func (n podNetwork) waitForGuestAnswer(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var answer string
		inNetns(t, n.out, func() {
			conn, err := net.DialTimeout("tcp", "10.99.0.2:8080", 2*time.Second)
			if err != nil {
				return
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, _ := io.ReadAll(conn)
			answer = string(b)
		})
		if answer == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "no answer from the guest at the pod's address (last %q)", answer)
		time.Sleep(200 * time.Millisecond)
	}
}
