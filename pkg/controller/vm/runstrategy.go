package vm

import (
	"math"
	"math/rand/v2"
	"time"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// action is what one sync does about a VM's instance. decide computes it from the VM, its
// instance and the time, and nothing else.
type action struct {
	// create starts a new instance from the template.
	create bool
	// delete stops the current instance.
	delete bool
	// addStartRequest queues a Start request (RerunOnFailure after a failure), so the restart
	// survives a controller restart between the stop and the start.
	addStartRequest bool
	// runAlways switches a Halted VM to Always, to honour a start request.
	runAlways bool
	// retryAfter delays a start for the crash-loop back-off.
	retryAfter time.Duration
}

// decide applies the run strategy, as KubeVirt does:
//   - Always: an instance that reached a final phase, or a stop request for it (a restart),
//     deletes it; with none, one is started once the back-off allows.
//   - RerunOnFailure: a Failed instance is replaced (through a start request), a Succeeded one
//     is removed and not replaced; with none, one is started only on a start request or when
//     the strategy was just switched to RerunOnFailure.
//   - Manual: only start and stop requests act.
//   - Halted: any instance is stopped; a start request switches the VM to Always.
//   - Once: an instance is started if there is none, and never again.
//
// A final instance whose early failure is not yet counted in status.startFailure is left
// alone for one round, so the count is written before the instance disappears.
func decide(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, now time.Time) action {
	strategy := vm.Spec.EffectiveRunStrategy()
	if vmi != nil && vmi.DeletionTimestamp != nil {
		return action{} // already stopping: wait until it is gone
	}
	if vmi != nil && failureUncounted(vm, vmi) {
		return action{}
	}
	switch strategy {
	case v1.RunStrategyAlways:
		if vmi != nil {
			return action{delete: vmi.IsFinal() || hasStopRequestFor(vm, vmi)}
		}
		return startAfterBackoff(vm, now)

	case v1.RunStrategyRerunOnFailure:
		if vmi != nil {
			switch {
			case hasStopRequestFor(vm, vmi), vmi.Status.Phase == v1.Succeeded:
				return action{delete: true}
			case vmi.Status.Phase == v1.Failed && hasStartRequest(vm):
				return action{delete: true}
			case vmi.Status.Phase == v1.Failed:
				return action{addStartRequest: true}
			}
			return action{}
		}
		if !hasStartRequest(vm) && vm.Status.RunStrategy == strategy {
			return action{}
		}
		return startAfterBackoff(vm, now)

	case v1.RunStrategyManual:
		if vmi != nil {
			return action{delete: hasStopRequestFor(vm, vmi)}
		}
		return action{create: hasStartRequest(vm)}

	case v1.RunStrategyHalted:
		if vmi != nil {
			return action{delete: true}
		}
		return action{runAlways: hasStartRequest(vm)}

	case v1.RunStrategyOnce:
		return action{create: vmi == nil}
	}
	return action{}
}

func startAfterBackoff(vm *v1.VirtualMachine, now time.Time) action {
	if left := backoffLeft(vm, now); left > 0 {
		return action{retryAfter: left}
	}
	return action{create: true}
}

func isRunning(vmi *v1.VirtualMachineInstance) bool {
	return vmi != nil && vmi.Status.Phase == v1.Running
}

func hasStartRequest(vm *v1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == v1.StartRequest
}

// hasStopRequestFor: only the first request counts, and a stop names the instance it is for.
func hasStopRequestFor(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == v1.StopRequest && r[0].UID != nil && *r[0].UID == vmi.UID
}

// Crash-loop back-off, KubeVirt's numbers: the n-th consecutive failure waits
// max(maxDelay/30, 10 s) × n², plus up to half that again at random so failing VMs spread
// out, capped at maxDelay (300 s).
const (
	maxStartBackoff = 300 * time.Second
	minBackoffStep  = 10 * time.Second
)

// startBackoff is the delay after the failCount-th consecutive failure; jitter(n) returns a
// number in [0, n).
func startBackoff(failCount int, jitter func(int) int) time.Duration {
	if failCount < 1 {
		failCount = 1
	}
	step := max(maxStartBackoff/30, minBackoffStep)
	delay := int(step.Seconds()) * int(math.Pow(float64(failCount), 2))
	delay += jitter(delay/2 + 1)
	return min(time.Duration(delay)*time.Second, maxStartBackoff)
}

func randIntn(n int) int { return rand.IntN(n) }

func backoffLeft(vm *v1.VirtualMachine, now time.Time) time.Duration {
	f := vm.Status.StartFailure
	if f == nil || f.RetryAfterTimestamp == nil {
		return 0
	}
	if left := f.RetryAfterTimestamp.Sub(now); left > 0 {
		return left
	}
	return 0
}

func wasRunning(vmi *v1.VirtualMachineInstance) bool {
	if vmi == nil {
		return false
	}
	for _, ts := range vmi.Status.PhaseTransitionTimestamps {
		if ts.Phase == v1.Running {
			return true
		}
	}
	return false
}

// failedEarly: the instance ended without ever running, whatever the final phase.
func failedEarly(vmi *v1.VirtualMachineInstance) bool {
	return vmi != nil && vmi.IsFinal() && !wasRunning(vmi)
}

// failureUncounted: a restarting strategy will replace this instance, and its early failure is
// not in status.startFailure yet.
func failureUncounted(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	if !restarts(vm.Spec.EffectiveRunStrategy()) || !failedEarly(vmi) {
		return false
	}
	return vm.Status.StartFailure == nil || vm.Status.StartFailure.LastFailedVMIUID != vmi.UID
}

// restarts: the strategies whose failures count towards the crash-loop back-off.
func restarts(s v1.VirtualMachineRunStrategy) bool {
	return s == v1.RunStrategyAlways || s == v1.RunStrategyRerunOnFailure || s == v1.RunStrategyOnce
}
