package virtctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// A console or VNC stream that cannot be opened is waited for only while the instance is on
// its way to run; every other refusal (forbidden, not found, invalid) is final and reported at
// once with the server's message, so that a script learns of its mistake in a second, not after
// minutes of silent retries.

// waitFor says whether a failed attempt to open an instance's stream is worth another, and why
// (a line for the user). vmi and vm are the instance and the VM of that name, nil when there
// is none (or they could not be read).
func waitFor(err error, vmi *v1.VirtualMachineInstance, vm *v1.VirtualMachine) (string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// No answer from the API (a connection refused or cut): it may come back.
		return fmt.Sprintf("cannot reach the API (%v)", err), true
	}
	code := int(status.Status().Code)
	switch {
	case code == http.StatusTooManyRequests || code >= 500:
		// kube-apiserver answers 503 while virt-api restarts, virt-api 502 while the
		// instance's node agent does.
		return fmt.Sprintf("the API answers %d (%s)", code, status.Status().Message), true
	case code != http.StatusNotFound && code != http.StatusBadRequest:
		return "", false // forbidden, invalid, unauthorized: waiting changes nothing
	}
	// Not found, or not running (400): wait while an instance is coming.
	if vmi != nil && vmi.DeletionTimestamp == nil {
		switch vmi.Status.Phase {
		case v1.VmPhaseUnset, v1.Pending, v1.Scheduling, v1.Scheduled:
			return fmt.Sprintf("VMI %s is %s", vmi.Name, phaseName(vmi.Status.Phase)), true
		case v1.Running: // it started between the request and the look
			return fmt.Sprintf("VMI %s is Running", vmi.Name), true
		}
	}
	if vm != nil && vmStarting(vm) {
		return fmt.Sprintf("VM %s is %s", vm.Name, vmStatusName(vm)), true
	}
	return "", false
}

// waitingForVolumeBinding is KubeVirt's status of a VM whose claims wait for a volume.
const waitingForVolumeBinding v1.VirtualMachinePrintableStatus = "WaitingForVolumeBinding"

// vmStarting says whether a VM is about to have a running instance: it is starting, or it is
// meant to run and its controller has not acted yet.
func vmStarting(vm *v1.VirtualMachine) bool {
	if vm.DeletionTimestamp != nil {
		return false
	}
	switch vm.Status.PrintableStatus {
	case v1.VirtualMachineStatusProvisioning, v1.VirtualMachineStatusStarting, waitingForVolumeBinding:
		return true
	case "", v1.VirtualMachineStatusStopped, v1.VirtualMachineStatusRunning:
		// A new VM, or a restart between two instances: what it is meant to do decides.
		return wantsToRun(vm)
	}
	return false
}

func wantsToRun(vm *v1.VirtualMachine) bool {
	if vm.Spec.RunStrategy != nil {
		switch *vm.Spec.RunStrategy {
		case v1.RunStrategyAlways, v1.RunStrategyRerunOnFailure:
			return true
		case v1.RunStrategyOnce, v1.RunStrategyManual:
			return len(vm.Status.StateChangeRequests) > 0 || vm.Status.PrintableStatus == ""
		}
		return false
	}
	return vm.Spec.Running != nil && *vm.Spec.Running
}

func phaseName(p v1.VirtualMachineInstancePhase) string {
	if p == v1.VmPhaseUnset {
		return "being created"
	}
	return string(p)
}

func vmStatusName(vm *v1.VirtualMachine) string {
	if vm.Status.PrintableStatus == "" || vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped {
		return "starting"
	}
	return string(vm.Status.PrintableStatus)
}

// openStreamWaiting opens an instance's console or VNC stream, trying again only while waitFor
// says the instance is coming, for at most timeout; it tells the user, once per reason, what it
// waits for. A refusal it does not wait for is returned at once.
func (c *cliContext) openStreamWaiting(ctx context.Context, name, stream string, timeout time.Duration, escaped <-chan struct{}) (*gwebsocket.Conn, error) {
	cfg, ns, err := c.target()
	if err != nil {
		return nil, err
	}
	kv, _, _, err := c.clients()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	said := ""
	for {
		ws, err := openStream(ctx, cfg, ns, name, stream)
		if err == nil {
			return ws, nil
		}
		var vmi *v1.VirtualMachineInstance
		var vm *v1.VirtualMachine
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			vmi, _ = kv.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
			vm, _ = kv.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
			if vmi != nil && vmi.Name == "" {
				vmi = nil
			}
			if vm != nil && vm.Name == "" {
				vm = nil
			}
		}
		why, retry := waitFor(err, vmi, vm)
		if !retry {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("gave up after %v: %s: %w", timeout, why, err)
		}
		if why != said {
			fmt.Fprintf(c.streams.ErrOut, "Waiting for the %s of %s: %s (up to %v)\r\n", stream, name, why, time.Until(deadline).Round(time.Second))
			said = why
		}
		select {
		case <-escaped:
			return nil, errEscaped
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// minutesOrDuration is KubeVirt's `console --timeout`, whole minutes ("--timeout=5"), that
// also takes a Go duration with its unit ("--timeout=90s"), which cannot be mistaken for
// minutes.
type minutesOrDuration time.Duration

func (m *minutesOrDuration) String() string {
	d := time.Duration(*m)
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d / time.Minute))
	}
	return d.String()
}

func (m *minutesOrDuration) Set(s string) error {
	var d time.Duration
	if n, err := strconv.Atoi(s); err == nil {
		d = time.Duration(n) * time.Minute
	} else if d, err = time.ParseDuration(s); err != nil || strings.TrimLeft(s, "+-0123456789.") == "" {
		return fmt.Errorf("%q is neither whole minutes (5) nor a duration with its unit (90s, 2m)", s)
	}
	if d <= 0 {
		return fmt.Errorf("%q: the timeout must be positive", s)
	}
	*m = minutesOrDuration(d)
	return nil
}

func (m *minutesOrDuration) Type() string { return "minutes" }
