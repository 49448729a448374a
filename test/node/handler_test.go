//go:build libvirt

package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/test/integration/framework"
)

const nodeName = "node-test"

// runHandler runs virt-handler's controller in-process until the returned stop is called.
func runHandler(t *testing.T, va *framework.VirtAPI, socketDir string) (stop func()) {
	c := handler.NewController(handler.Config{NodeName: nodeName, SocketDir: socketDir}, va.Client, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
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
// virt-handler against a real virt-api: Scheduled → Running/Ready, a handler restart that
// leaves the guest alone, and Succeeded when the guest powers off.
func TestHandlerRunsInstanceSurvivesRestartAndReportsPowerOff(t *testing.T) {
	va := framework.StartVirtAPI(t)
	ctx := context.Background()
	vmis := va.Client.KubevirtV1().VirtualMachineInstances("node-test")
	want := kernelBootVMI("handled")
	want.UID = ""
	vmi, err := vmis.Create(ctx, want, metav1.CreateOptions{})
	require.NoError(t, err)
	// What virt-controller does once the launcher pod is bound to this node.
	vmi.Status.Phase, vmi.Status.NodeName = v1.Scheduled, nodeName
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Short: unix socket paths have at most 107 bytes (in a pod: /var/run/hangar/sockets/<uid>).
	socketBase, err := os.MkdirTemp("", "hangar-sockets-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(socketBase) })
	r := startLauncherIn(t, filepath.Join(socketBase, string(vmi.UID)), nil, vmi)
	r.start = time.Now()
	stop := runHandler(t, va, socketBase)

	got := waitVMI(t, va, vmi, 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && readyStatus(v) == corev1.ConditionTrue
	})
	t.Logf("handler start -> Running: %s", time.Since(r.start))
	took := r.waitConsoleLog(banner+" hostname=handled", 120*time.Second)
	t.Logf("handler start -> banner: %s", took)
	writeFigure(t, "handler-start-to-banner", took)
	assert.Empty(t, got.Status.Interfaces)

	// A new handler adopts the running guest without touching it.
	qemu := r.qemuPid()
	stop()
	runHandler(t, va, socketBase)
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
