package kubevirt

// The hardware that guests from other hypervisors expect: firmware (BIOS or EFI with Secure
// Boot), a TPM, the clock and its timers, Hyper-V enlightenments, input devices. The names
// and semantics are KubeVirt's.

// Bootloader is the firmware a guest boots with; at most one member is set.
type Bootloader struct {
	// BIOS is SeaBIOS, the default.
	BIOS *BIOS
	// EFI is OVMF.
	EFI *EFI
}

// BIOS is the SeaBIOS firmware.
type BIOS struct {
	// UseSerial sends the BIOS's output to the serial console.
	UseSerial *bool
}

// EFI is the OVMF firmware.
type EFI struct {
	// SecureBoot boots only signed boot loaders, with Microsoft's and the distribution's keys
	// enrolled. Needs SMM. Defaults to true.
	SecureBoot *bool
	// Persistent keeps the EFI variables (NVRAM) across restarts of the VM, in the VM's state
	// claim. Defaults to false.
	Persistent *bool
}

// ClockOffset is the guest clock's offset; at most one member is set.
type ClockOffset struct {
	// UTC sets the guest clock to UTC at boot, shifted by OffsetSeconds.
	UTC *ClockOffsetUTC
	// Timezone sets the guest clock to local time in a time zone (TZ syntax).
	Timezone *ClockOffsetTimezone
}

// ClockOffsetUTC sets the guest clock to UTC at each boot.
type ClockOffsetUTC struct {
	// OffsetSeconds shifts the guest clock from UTC; changes the guest makes then persist
	// across its reboots.
	OffsetSeconds *int
}

// ClockOffsetTimezone is a time zone name such as Europe/Paris.
type ClockOffsetTimezone string

// Clock is the guest's real-time clock and timers.
type Clock struct {
	ClockOffset
	// Timer configures the guest's timers.
	Timer *Timer
}

// Timer configures a guest's timers; unset members keep the machine type's.
type Timer struct {
	// HPET is the high precision event timer.
	HPET *HPETTimer
	// KVM is kvmclock, the paravirtual clock of Linux guests (KVM only).
	KVM *KVMTimer
	// PIT is the programmable interval timer.
	PIT *PITTimer
	// RTC is the real-time clock.
	RTC *RTCTimer
	// Hyperv is the Hyper-V reference clock of Windows guests (KVM only).
	Hyperv *HypervTimer
}

// HPETTickPolicy says what happens to ticks the guest missed.
type HPETTickPolicy string

// PITTickPolicy says what happens to ticks the guest missed.
type PITTickPolicy string

// RTCTickPolicy says what happens to ticks the guest missed.
type RTCTickPolicy string

// RTCTimerTrack is what the RTC follows: the guest's time or the host's.
type RTCTimerTrack string

// Tick policies and RTC tracks.
const (
	HPETTickPolicyDelay   HPETTickPolicy = "delay"
	HPETTickPolicyCatchup HPETTickPolicy = "catchup"
	HPETTickPolicyMerge   HPETTickPolicy = "merge"
	HPETTickPolicyDiscard HPETTickPolicy = "discard"
	PITTickPolicyDelay    PITTickPolicy  = "delay"
	PITTickPolicyCatchup  PITTickPolicy  = "catchup"
	PITTickPolicyDiscard  PITTickPolicy  = "discard"
	RTCTickPolicyDelay    RTCTickPolicy  = "delay"
	RTCTickPolicyCatchup  RTCTickPolicy  = "catchup"
	TrackGuest            RTCTimerTrack  = "guest"
	TrackWall             RTCTimerTrack  = "wall"
)

// RTCTimer is the real-time clock.
type RTCTimer struct {
	// TickPolicy is delay or catchup.
	TickPolicy RTCTickPolicy
	// Present false removes the timer. Defaults to true.
	Present *bool
	// Track is guest or wall.
	Track RTCTimerTrack
}

// HPETTimer is the high precision event timer.
type HPETTimer struct {
	// TickPolicy is delay, catchup, merge or discard.
	TickPolicy HPETTickPolicy
	// Present false removes the timer. Defaults to true.
	Present *bool
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	// TickPolicy is delay, catchup or discard.
	TickPolicy PITTickPolicy
	// Present false removes the timer. Defaults to true.
	Present *bool
}

// KVMTimer is kvmclock.
type KVMTimer struct {
	// Present false removes the timer. Defaults to true.
	Present *bool
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	// Present false removes the timer. Defaults to true.
	Present *bool
}

// FeatureAPIC is the guest's local APIC.
type FeatureAPIC struct {
	FeatureState
	// EndOfInterrupt enables the EOI notification of the paravirtual APIC.
	EndOfInterrupt bool
}

// FeatureSpinlocks is the Hyper-V spinlock retry count.
type FeatureSpinlocks struct {
	FeatureState
	// Spinlocks is how often the guest retries before it notifies the hypervisor: at least
	// 4096, the default.
	Spinlocks *uint32
}

// FeatureVendorID is the hypervisor vendor ID the guest sees.
type FeatureVendorID struct {
	FeatureState
	// Vendorid is at most twelve characters.
	Vendorid string
}

// SyNICTimer is the synthetic interrupt controller's timers.
type SyNICTimer struct {
	FeatureState
	// Direct delivers timer expirations as interrupts.
	Direct *FeatureState
}

// TLBFlush is the paravirtual TLB flush.
type TLBFlush struct {
	FeatureState
	// Direct sends flushes to the hypervisor directly.
	Direct *FeatureState
	// Extended allows partial flushes.
	Extended *FeatureState
}

// FeatureHyperv are the Hyper-V enlightenments (KVM only).
type FeatureHyperv struct {
	// Relaxed turns off the guest's watchdog timeouts, which a preempted vCPU would trip.
	Relaxed *FeatureState
	// VAPIC is the paravirtual APIC: fewer exits for interrupts.
	VAPIC *FeatureState
	// Spinlocks is how often the guest retries a spinlock before it notifies the hypervisor.
	Spinlocks *FeatureSpinlocks
	// Vpindex lets the guest identify its virtual processors.
	Vpindex *FeatureState
	// Runtime reports the time the guest's vCPUs ran, for its scheduler.
	Runtime *FeatureState
	// Synic is the synthetic interrupt controller. Needs vpindex.
	Synic *FeatureState
	// Synictimer are the synthetic timers (stimer). Needs synic.
	Synictimer *SyNICTimer
	// ResetFeature (reset) lets the guest reset itself through Hyper-V; not named Reset,
	// which protobuf's generated code has as a method.
	ResetFeature *FeatureState
	// Vendorid is the hypervisor vendor ID the guest sees.
	Vendorid *FeatureVendorID
	// Frequencies tells the guest the TSC and APIC frequencies.
	Frequencies *FeatureState
	// Reenlightenment notifies the guest when the TSC frequency changes (after a migration).
	Reenlightenment *FeatureState
	// Tlbflush is the paravirtual TLB flush. Needs vpindex.
	Tlbflush *TLBFlush
	// IPI is the paravirtual inter-processor interrupt. Needs vpindex.
	IPI *FeatureState
	// EVMCS is the enlightened VMCS for nested guests. Needs vapic and the vmx CPU feature.
	EVMCS *FeatureState
}

// FeatureKVM says how KVM shows itself to the guest.
type FeatureKVM struct {
	// Hidden hides KVM from the guest's CPUID.
	Hidden bool
}

// CPUFeature adds a CPU feature to the model, or removes it.
type CPUFeature struct {
	// Name of the feature, as libvirt names it (for example vmx, pcid).
	Name string
	// Policy is force, require, optional, disable or forbid. Defaults to require.
	Policy string
}

// InputBus is the bus of an input device.
type InputBus string

// InputType is the kind of an input device.
type InputType string

// Input buses and types.
const (
	InputBusUSB     InputBus  = "usb"
	InputBusVirtio  InputBus  = "virtio"
	InputTypeTablet InputType = "tablet"
)

// Input is an input device: a tablet, which gives the VNC pointer absolute coordinates.
type Input struct {
	// Bus is usb or virtio. Defaults to usb.
	Bus InputBus
	// Type is tablet.
	Type InputType
	// Name of the device.
	Name string
}

// TPMDevice is an emulated TPM 2.0 (swtpm).
type TPMDevice struct {
	// Enabled false removes the TPM. Defaults to true.
	Enabled *bool
	// Persistent keeps the TPM's state across restarts of the VM, in the VM's state claim.
	Persistent *bool
}
