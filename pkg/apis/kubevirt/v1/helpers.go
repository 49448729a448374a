package v1

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

// Labels of launcher pods, as KubeVirt sets them.
const (
	// AppLabel names the component a pod belongs to; launcher pods have virt-launcher.
	AppLabel = "kubevirt.io"
	// LauncherAppLabelValue is AppLabel's value on launcher pods.
	LauncherAppLabelValue = "virt-launcher"
	// CreatedByLabel carries the UID of the instance a launcher pod runs.
	CreatedByLabel = "kubevirt.io/created-by"
)
