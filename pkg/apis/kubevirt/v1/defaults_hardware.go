package v1

import "k8s.io/utils/ptr"

// DefaultSpinlocks is the Hyper-V spinlock retry count when the spec gives none (and the
// smallest Windows accepts).
const DefaultSpinlocks uint32 = 4096

// DefaultInputName names the tablet autoattachInputDevice adds, as KubeVirt names it.
const DefaultInputName = "default-0"

// setDefaultGuestHardware fills in the guest hardware fields as KubeVirt's defaulters and
// mutating webhook do: a feature or timer that is given is on unless it says otherwise, input
// devices are USB tablets, and Hyper-V enlightenments get the enlightenments they need.
func setDefaultGuestHardware(spec *VirtualMachineInstanceSpec) {
	if f := spec.Domain.Features; f != nil {
		for _, s := range []*FeatureState{f.SMM, f.Pvspinlock} {
			enable(s)
		}
		if f.APIC != nil {
			enable(&f.APIC.FeatureState)
		}
		if f.Hyperv != nil {
			setDefaultHyperv(f.Hyperv, spec)
		}
	}
	if c := spec.Domain.Clock; c != nil && c.Timer != nil {
		t := c.Timer
		for _, present := range presentFlags(t) {
			if *present == nil {
				*present = ptr.To(true)
			}
		}
	}
	devices := &spec.Domain.Devices
	if a := devices.AutoattachInputDevice; a != nil && *a && len(devices.Inputs) == 0 {
		devices.Inputs = []Input{{Name: DefaultInputName}}
	}
	for i := range spec.Domain.Devices.Inputs {
		in := &spec.Domain.Devices.Inputs[i]
		if in.Bus == "" {
			in.Bus = InputBusUSB
		}
		if in.Type == "" {
			in.Type = InputTypeTablet
		}
	}
}

func presentFlags(t *Timer) []**bool {
	var out []**bool
	if t.HPET != nil {
		out = append(out, &t.HPET.Present)
	}
	if t.KVM != nil {
		out = append(out, &t.KVM.Present)
	}
	if t.PIT != nil {
		out = append(out, &t.PIT.Present)
	}
	if t.RTC != nil {
		out = append(out, &t.RTC.Present)
	}
	if t.Hyperv != nil {
		out = append(out, &t.Hyperv.Present)
	}
	return out
}

// enable turns a given feature on unless it says otherwise; nil stays nil.
func enable(s *FeatureState) {
	if s != nil && s.Enabled == nil {
		s.Enabled = ptr.To(true)
	}
}

// IsEnabled says whether a feature that may be absent is on: absent is off, given is on
// unless it says otherwise.
func (s *FeatureState) IsEnabled() bool {
	return s != nil && (s.Enabled == nil || *s.Enabled)
}

func setDefaultHyperv(h *FeatureHyperv, spec *VirtualMachineInstanceSpec) {
	for _, s := range []*FeatureState{h.Relaxed, h.VAPIC, h.Vpindex, h.Runtime, h.Synic, h.ResetFeature,
		h.Frequencies, h.Reenlightenment, h.IPI, h.EVMCS} {
		enable(s)
	}
	if h.Spinlocks != nil {
		enable(&h.Spinlocks.FeatureState)
		if *h.Spinlocks.Enabled && h.Spinlocks.Spinlocks == nil {
			h.Spinlocks.Spinlocks = ptr.To(DefaultSpinlocks)
		}
	}
	if h.Vendorid != nil {
		enable(&h.Vendorid.FeatureState)
	}
	if h.Synictimer != nil {
		enable(&h.Synictimer.FeatureState)
		enable(h.Synictimer.Direct)
	}
	if h.Tlbflush != nil {
		enable(&h.Tlbflush.FeatureState)
		enable(h.Tlbflush.Direct)
		enable(h.Tlbflush.Extended)
	}
	// What an enlightenment needs is turned on for it when the spec leaves it unset, as
	// KubeVirt's webhook does; one the spec turns off is a validation error instead.
	need := func(on bool, dep **FeatureState) {
		if on && *dep == nil {
			*dep = &FeatureState{Enabled: ptr.To(true)}
		}
	}
	need(h.Synictimer != nil && h.Synictimer.IsEnabled(), &h.Synic)
	need(h.Synic.IsEnabled() || h.IPI.IsEnabled() || (h.Tlbflush != nil && h.Tlbflush.IsEnabled()), &h.Vpindex)
	need(h.EVMCS.IsEnabled(), &h.VAPIC)
	if h.EVMCS.IsEnabled() {
		setCPUFeature(spec, CPUFeature{Name: "vmx", Policy: "require"})
	}
}

// setCPUFeature adds a CPU feature, or sets its policy if the spec has it.
func setCPUFeature(spec *VirtualMachineInstanceSpec, want CPUFeature) {
	if spec.Domain.CPU == nil {
		spec.Domain.CPU = &CPU{}
	}
	for i := range spec.Domain.CPU.Features {
		if spec.Domain.CPU.Features[i].Name == want.Name {
			spec.Domain.CPU.Features[i].Policy = want.Policy
			return
		}
	}
	spec.Domain.CPU.Features = append(spec.Domain.CPU.Features, want)
}
