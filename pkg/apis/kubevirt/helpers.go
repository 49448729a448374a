package kubevirt

import "math"

// RunStrategyFromRunning is the run strategy the deprecated spec.running stands for.
func RunStrategyFromRunning(running bool) VirtualMachineRunStrategy {
	if running {
		return RunStrategyAlways
	}
	return RunStrategyHalted
}

// EffectiveRunStrategy is the run strategy a VirtualMachine spec asks for, whichever of
// runStrategy and the deprecated running it uses.
func (s *VirtualMachineSpec) EffectiveRunStrategy() VirtualMachineRunStrategy {
	switch {
	case s.RunStrategy != nil:
		return *s.RunStrategy
	case s.Running != nil:
		return RunStrategyFromRunning(*s.Running)
	}
	return RunStrategyHalted
}

// IsFinal says whether an instance has stopped for good.
func (vmi *VirtualMachineInstance) IsFinal() bool {
	return vmi.Status.Phase == Succeeded || vmi.Status.Phase == Failed
}

// DefaultGracePeriodSeconds is the time a guest gets to shut down when none is given.
const DefaultGracePeriodSeconds int64 = 30

// IsFinal says whether a migration has ended, one way or the other.
func (m *VirtualMachineInstanceMigration) IsFinal() bool {
	return m.Status.Phase == MigrationSucceeded || m.Status.Phase == MigrationFailed
}

// VCPUCount is the number of virtual CPUs of a topology: cores × sockets × threads, a factor
// of 0 (unset) counting as 1. Validation bounds the product (validation.MaxVCPUs); the
// product of three uint32s can still exceed an int64, so an unvalidated topology saturates
// at math.MaxInt64 instead of wrapping to a small or negative count. Both versions' CPU.VCPUs
// count with it, so every component counts a guest's vCPUs alike.
func VCPUCount(cores, sockets, threads uint32) int64 {
	n := int64(1)
	for _, f := range []uint32{cores, sockets, threads} {
		if f == 0 {
			continue
		}
		if n > math.MaxInt64/int64(f) {
			return math.MaxInt64
		}
		n *= int64(f)
	}
	return n
}

// VCPUs is the guest's number of virtual CPUs; 1 without a topology.
func (c *CPU) VCPUs() int64 {
	if c == nil {
		return 1
	}
	return VCPUCount(c.Cores, c.Sockets, c.Threads)
}
