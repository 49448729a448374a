package kubevirt

// RunStrategyFromRunning is the run strategy the deprecated spec.running stands for.
func RunStrategyFromRunning(running bool) VirtualMachineRunStrategy {
	if running {
		return RunStrategyAlways
	}
	return RunStrategyHalted
}
