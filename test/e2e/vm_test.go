//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientwebsocket "k8s.io/client-go/transport/websocket"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/browser"
)

// guestImage is the kernelBoot test guest hack/install-local.sh imports (hack/guest/build-kernelboot.sh).
const guestImage = "hangar.local/kernelboot-guest:dev"

// banner is what the test guest prints on its serial console when it has booted.
const banner = "HANGAR-GUEST-READY"

// loadDiskDrivers loads the kernelBoot guest's disk drivers, typed on its shell: it loads them
// at boot only when it boots from a disk.
const loadDiskDrivers = "for m in $(cat /lib/modules/hangar/block.order); do insmod /lib/modules/hangar/$m.ko 2>/dev/null; done"

func guestSpec() v1.VirtualMachineInstanceSpec {
	return v1.VirtualMachineInstanceSpec{
		Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Firmware: &v1.Firmware{KernelBoot: &v1.KernelBoot{
				KernelArgs: "console=ttyS0 quiet no_timer_check",
				Container: &v1.KernelBootContainer{Image: guestImage, ImagePullPolicy: corev1.PullNever,
					KernelPath: "/boot/vmlinux", InitrdPath: "/boot/initramfs.cpio.gz"},
			}},
		},
		TerminationGracePeriodSeconds: ptr.To[int64](5),
	}
}

// openStream opens an instance's console or VNC through kube-apiserver, as virtctl does.
func openStream(t *testing.T, ns, name, stream string) *gwebsocket.Conn {
	t.Helper()
	var conn *gwebsocket.Conn
	var err error
	require.Eventually(t, func() bool {
		conn, err = dialStream(ns, name, stream)
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "open %s: %v", stream, err)
	return conn
}

// dialStream makes one attempt at opening a console or VNC stream.
func dialStream(ns, name, stream string) (*gwebsocket.Conn, error) {
	rt, holder, err := clientwebsocket.RoundTripperFor(config)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodGet,
		config.Host+"/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/"+name+"/"+stream, nil)
	return clientwebsocket.Negotiate(rt, holder, req, "plain.kubevirt.io")
}

// stream collects what an instance's console or VNC sends, for the test to look at.
type stream struct {
	conn   *gwebsocket.Conn
	mu     sync.Mutex
	seen   strings.Builder
	closed chan struct{}
}

// attach opens a stream and reads it in the background until it closes.
func attach(t *testing.T, ns, name, which string) *stream {
	t.Helper()
	s := &stream{conn: openStream(t, ns, name, which), closed: make(chan struct{})}
	t.Cleanup(func() { s.conn.Close() })
	go func() {
		defer close(s.closed)
		for {
			_, data, err := s.conn.ReadMessage()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.seen.Write(data)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *stream) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.String()
}

// waitFor waits until want has come.
func (s *stream) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(s.output(), want) },
		timeout, 50*time.Millisecond, "waiting for %q; saw %q", want, s.output())
}

// typeUntil types a command until its answer shows: a starting shell may drop the first.
func (s *stream) typeUntil(t *testing.T, command, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.output(), want) {
		require.True(t, time.Now().Before(deadline), "no %q after typing %q; saw %q", want, command, s.output())
		require.NoError(t, s.conn.WriteMessage(gwebsocket.BinaryMessage, []byte(command+"\r")))
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !strings.Contains(s.output(), want); {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func waitVMI(t *testing.T, ns, name string, timeout time.Duration, ok func(*v1.VirtualMachineInstance) bool) *v1.VirtualMachineInstance {
	t.Helper()
	var vmi *v1.VirtualMachineInstance
	require.Eventually(t, func() bool {
		got, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		vmi = got
		return ok(got)
	}, timeout, 250*time.Millisecond, "instance %s/%s: %+v", ns, name, vmi)
	return vmi
}

// watchReady records the changes of an instance's Ready condition from now on; the function
// returned stops the watch and gives them (an instance without the condition counts as
// False).
func watchReady(t *testing.T, ns, name string) func() []corev1.ConditionStatus {
	t.Helper()
	w, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	var (
		mu      sync.Mutex
		history []corev1.ConditionStatus
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			vmi, ok := ev.Object.(*v1.VirtualMachineInstance)
			if !ok {
				continue
			}
			status := corev1.ConditionFalse
			if c := vmi.Status.Condition(v1.VirtualMachineInstanceReady); c != nil {
				status = c.Status
			}
			mu.Lock()
			if len(history) == 0 || history[len(history)-1] != status {
				history = append(history, status)
			}
			mu.Unlock()
		}
	}()
	return func() []corev1.ConditionStatus {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return history
	}
}

// TestVMIBoots boots a guest (TCG) on the local cluster: Running with an address, a console
// that shows the banner and answers a command, a VNC display (virtctl's browser page in
// Chromium shows it and types on it), and deletion that stops QEMU and the pod within the
// grace period.
func TestVMIBoots(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-boot")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	readiness := watchReady(t, ns, "guest")
	_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "guest", "console") // waits for Running, then the guest boots
	vmi := waitVMI(t, ns, "guest", 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
		ready := v.Status.Condition(v1.VirtualMachineInstanceReady)
		return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != "" &&
			ready != nil && ready.Status == corev1.ConditionTrue
	})
	console.typeUntil(t, "echo e2e-$((40+2))", "e2e-42")
	// Ready went from False to True once: virt-handler and virt-controller did not take turns
	// rewriting it while the kubelet had yet to report the launcher pod ready.
	assert.Equal(t, []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue}, readiness())
	// libvirt started the guest from the QEMU capabilities virt-handler's init container
	// probed, instead of probing QEMU in this launcher again.
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	logs, err := kube.CoreV1().Pods(ns).GetLogs(pods[0].Name, &corev1.PodLogOptions{Container: layout.ComputeContainer}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(logs), `"QEMU capabilities from virt-handler" used=true`)

	vnc := attach(t, ns, "guest", "vnc")
	vnc.waitFor(t, "RFB 003.008", 10*time.Second)
	shot, err := hangar.Discovery().RESTClient().Get().
		AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/vnc/screenshot").DoRaw(ctx)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "vnc/screenshot answers a PNG")
	assert.Positive(t, img.Bounds().Dx())
	browserVNC(t, ns, "guest", console, img)

	start := time.Now()
	require.NoError(t, vmis.Delete(ctx, "guest", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := vmis.Get(ctx, "guest", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(launcherPods(t, ns, vmi.UID)) == 0
	}, 60*time.Second, 250*time.Millisecond, "the instance and its launcher pod go")
	t.Logf("deleted in %v (grace period 5 s)", time.Since(start))
	assert.Empty(t, guestProcesses(t, ns+"_guest"), "QEMU is gone")
}

// browserVNC runs `virtctl vnc --browser` and opens its page as a browser would, then in
// Chromium: the page shows the guest's screen (as vnc/screenshot has it), what is typed
// there reaches the guest, whose serial console (console) prints it, and the page's
// Ctrl+Alt+Del reboots the guest.
func browserVNC(t *testing.T, ns, name string, console *stream, screenshot image.Image) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "virtctl")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/virtctl").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "-n", ns, "vnc", name, "--browser")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	page := regexp.MustCompile(`http://\S+/`).FindString(line)
	require.NotEmpty(t, page, "virtctl prints the page's address: %q", line)

	resp, err := http.Get(page)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "rfb.js")

	u, err := url.Parse(page)
	require.NoError(t, err)
	origin := "http://" + u.Host
	wsURL := "ws://" + u.Host + u.Path + "websocket"
	_, refused, err := gwebsocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {"http://evil.example"}})
	require.Error(t, err, "another site's page gets no websocket")
	require.NotNil(t, refused)
	assert.Equal(t, http.StatusForbidden, refused.StatusCode)
	conn, _, err := gwebsocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {origin}})
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, greeting, err := conn.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "RFB 003.008\n", string(greeting))
	conn.Close()

	p := browser.StartVNCPage(t, page)
	assert.Equal(t, screenshot.Bounds().Dx(), p.Width)
	assert.Equal(t, screenshot.Bounds().Dy(), p.Height)
	// The same screen as vnc/screenshot's, but for the text cursor, which blinks: one
	// character cell at most.
	var diff int
	require.Eventually(t, func() bool {
		diff, err = browser.DiffPixels(screenshot, p.Screen())
		require.NoError(t, err)
		return diff <= 9*16
	}, 20*time.Second, 250*time.Millisecond, "the page shows the guest's screen (%d pixels differ)", diff)

	// The shell on the guest's tty1 (the VGA console) gets what is typed, Shift and all.
	p.Type("echo typed-in-the-browser-$((6*7)) >/dev/ttyS0\n")
	console.waitFor(t, "typed-in-the-browser-42", 60*time.Second)

	p.CtrlAltDel()
	require.Eventually(t, func() bool { return strings.Count(console.output(), banner) >= 2 },
		120*time.Second, 250*time.Millisecond, "Ctrl+Alt+Del reboots the guest, which boots again")
}

// TestKilledLauncherRestartsTheVM kills a running VM's launcher: its container goes, QEMU
// with it, and nothing is left on the node to report how the guest ended, as after a node
// restart. The instance fails from its ended pod and the VM (Always) starts a new one.
func TestKilledLauncherRestartsTheVM(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-launcher-crash")
	spec := guestSpec()
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "phoenix"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	first := waitVMI(t, ns, "phoenix", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })

	pids := launcherProcesses(t, first.UID)
	require.NotEmpty(t, pids, "the launcher of %s runs on this node", first.UID)
	qemus := guestProcesses(t, ns+"_phoenix")
	require.NotEmpty(t, qemus, "the guest of %s runs on this node", first.UID)
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	start := time.Now()
	// The launcher pod's PID 1 is its pause container, not the launcher: the runtime must
	// still end QEMU with the launcher's container, and pause must reap it (no zombie).
	require.Eventually(t, func() bool {
		for _, pid := range qemus {
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
				return false
			}
		}
		return true
	}, 30*time.Second, 250*time.Millisecond, "QEMU %v outlived its launcher, or stayed a zombie", qemus)
	waitVMI(t, ns, "phoenix", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != first.UID && v.Status.Phase == v1.Running
	})
	t.Logf("a new instance runs %v after the launcher was killed", time.Since(start).Round(time.Second))
	waitForStatus(t, ns, "phoenix", v1.VirtualMachineStatusRunning)
}

// launcherProcesses are the virt-launcher processes of an instance on this node (found by
// the instance UID in their environment).
func launcherProcesses(t *testing.T, uid types.UID) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if strings.TrimSpace(string(comm)) == "virt-launcher" && bytes.Contains(env, []byte("HANGAR_VMI_UID="+string(uid)+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// guestProcesses are the QEMU processes on this node of the libvirt domain (<namespace>_<name>).
func guestProcesses(t *testing.T, domain string) []int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "guest="+domain+",").Output()
	var pids []int
	for _, field := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(field)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

// TestKilledQEMUFailsTheInstance kills the guest's QEMU on the node: the instance fails.
func TestKilledQEMUFailsTheInstance(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-crash")
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "victim"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitVMI(t, ns, "victim", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	out, err := exec.Command("pkill", "-9", "-f", "guest="+ns+"_victim").CombinedOutput()
	require.NoError(t, err, "kill QEMU: %s", out)
	vmi := waitVMI(t, ns, "victim", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Failed })
	assert.NotEmpty(t, vmi.Status.Reason)
}

// TestVMLifecycleWithActions drives a VM as a user does with virtctl: start, the banner on the
// console, restart (a new instance, the banner again), stop; STATUS follows in kubectl get.
func TestVMLifecycleWithActions(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-actions")
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyHalted),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: guestSpec()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	status := func() string {
		out, err := kubectl(t, "-n", ns, "get", "vm", "vm", "-o", "jsonpath={.status.printableStatus}")
		require.NoError(t, err, out)
		return out
	}
	require.Eventually(t, func() bool { return status() == "Stopped" }, 30*time.Second, 250*time.Millisecond)

	out, err := virtctl(t, "-n", ns, "start", "vm")
	require.NoError(t, err, out)
	console := attach(t, ns, "vm", "console")
	console.waitFor(t, banner, 60*time.Second)
	first := waitVMI(t, ns, "vm", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	require.Eventually(t, func() bool { return status() == "Running" }, 30*time.Second, 250*time.Millisecond)

	out, err = virtctl(t, "-n", ns, "restart", "vm")
	require.NoError(t, err, out)
	// Attach as soon as the new instance exists: the console opens when it runs, before the
	// guest has booted, so the banner shows again.
	require.Eventually(t, func() bool {
		v, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm", metav1.GetOptions{})
		return err == nil && v.UID != first.UID
	}, 90*time.Second, 100*time.Millisecond, "a restart makes a new instance")
	attach(t, ns, "vm", "console").waitFor(t, banner, 90*time.Second)
	waitVMI(t, ns, "vm", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != first.UID && v.Status.Phase == v1.Running
	})
	require.Eventually(t, func() bool { return status() == "Running" }, 30*time.Second, 250*time.Millisecond)

	// Two clients: the newest takes the console over and the first is closed, as virtctl
	// console documents. A dropped connection does not keep the console: the next client gets it.
	first2 := attach(t, ns, "vm", "console")
	first2.typeUntil(t, "echo one-$((0+1))", "one-1")
	second2 := attach(t, ns, "vm", "console")
	second2.typeUntil(t, "echo two-$((1+1))", "two-2")
	select {
	case <-first2.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the first console client was not closed when a second one connected")
	}
	require.NoError(t, second2.conn.UnderlyingConn().Close()) // dropped, no close frame
	attach(t, ns, "vm", "console").typeUntil(t, "echo three-$((1+2))", "three-3")

	out, err = virtctl(t, "-n", ns, "stop", "vm")
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return status() == "Stopped" }, 90*time.Second, 250*time.Millisecond)
}

// virtctl runs the project's virtctl against the cluster.
func virtctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("go", append([]string{"run", "../../cmd/virtctl", "--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// TestHandlerRestartKeepsGuests restarts virt-handler under a running guest: the guest goes
// on undisturbed and its console works through the new handler.
func TestHandlerRestartKeepsGuests(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-handler")
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "steady"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	before := waitVMI(t, ns, "steady", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	attach(t, ns, "steady", "console").typeUntil(t, "echo before-$((2*3))", "before-6")
	pods := launcherPods(t, ns, before.UID)
	require.Len(t, pods, 1)

	handler := "app.kubernetes.io/name=virt-handler"
	handlers, err := kube.CoreV1().Pods("hangar").List(ctx, metav1.ListOptions{LabelSelector: handler})
	require.NoError(t, err)
	require.NoError(t, kube.CoreV1().Pods("hangar").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: handler}))
	waitReady(t, handler, len(handlers.Items)) // one per node

	after, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "steady", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.Running, after.Status.Phase)
	assert.Equal(t, before.UID, after.UID)
	again := launcherPods(t, ns, before.UID)
	require.Len(t, again, 1)
	assert.Equal(t, pods[0].UID, again[0].UID, "the launcher pod is the same")
	assert.Zero(t, again[0].Status.ContainerStatuses[0].RestartCount)
	attach(t, ns, "steady", "console").typeUntil(t, "echo after-$((3*3))", "after-9")
}
