package kubevirt

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
