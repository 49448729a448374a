package v1

// The hardware that guests from other hypervisors expect: firmware (BIOS or EFI with Secure
// Boot), a TPM, the clock and its timers, Hyper-V enlightenments, input devices. The names
// and semantics are KubeVirt's.

// Bootloader is the firmware a guest boots with; at most one member is set.
type Bootloader struct {
	// BIOS is SeaBIOS, the default.
	// +optional
	BIOS *BIOS `json:"bios,omitempty"`
	// EFI is OVMF.
	// +optional
	EFI *EFI `json:"efi,omitempty"`
}

// BIOS is the SeaBIOS firmware.
type BIOS struct {
	// UseSerial sends the BIOS's output to the serial console.
	// +optional
	UseSerial *bool `json:"useSerial,omitempty"`
}

// EFI is the OVMF firmware.
type EFI struct {
	// SecureBoot boots only signed boot loaders, with Microsoft's and the distribution's keys
	// enrolled. Needs SMM. Defaults to true.
	// +optional
	SecureBoot *bool `json:"secureBoot,omitempty"`
	// Persistent keeps the EFI variables (NVRAM) across restarts of the VM, in the VM's state
	// claim. Defaults to false.
	// +optional
	Persistent *bool `json:"persistent,omitempty"`
}

// ClockOffset is the guest clock's offset; at most one member is set.
type ClockOffset struct {
	// UTC sets the guest clock to UTC at boot, shifted by OffsetSeconds.
	// +optional
	UTC *ClockOffsetUTC `json:"utc,omitempty"`
	// Timezone sets the guest clock to local time in a time zone (TZ syntax).
	// +optional
	Timezone *ClockOffsetTimezone `json:"timezone,omitempty"`
}

// ClockOffsetUTC sets the guest clock to UTC at each boot.
type ClockOffsetUTC struct {
	// OffsetSeconds shifts the guest clock from UTC; changes the guest makes then persist
	// across its reboots.
	// +optional
	OffsetSeconds *int `json:"offsetSeconds,omitempty"`
}

// ClockOffsetTimezone is a time zone name such as Europe/Paris.
type ClockOffsetTimezone string

// Clock is the guest's real-time clock and timers.
type Clock struct {
	ClockOffset `json:",inline"`
	// Timer configures the guest's timers.
	// +optional
	Timer *Timer `json:"timer,omitempty"`
}

// Timer configures a guest's timers; unset members keep the machine type's.
type Timer struct {
	// HPET is the high precision event timer.
	// +optional
	HPET *HPETTimer `json:"hpet,omitempty"`
	// KVM is kvmclock, the paravirtual clock of Linux guests (KVM only).
	// +optional
	KVM *KVMTimer `json:"kvm,omitempty"`
	// PIT is the programmable interval timer.
	// +optional
	PIT *PITTimer `json:"pit,omitempty"`
	// RTC is the real-time clock.
	// +optional
	RTC *RTCTimer `json:"rtc,omitempty"`
	// Hyperv is the Hyper-V reference clock of Windows guests (KVM only).
	// +optional
	Hyperv *HypervTimer `json:"hyperv,omitempty"`
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
	// +optional
	TickPolicy RTCTickPolicy `json:"tickPolicy,omitempty"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty"`
	// Track is guest or wall.
	// +optional
	Track RTCTimerTrack `json:"track,omitempty"`
}

// HPETTimer is the high precision event timer.
type HPETTimer struct {
	// TickPolicy is delay, catchup, merge or discard.
	// +optional
	TickPolicy HPETTickPolicy `json:"tickPolicy,omitempty"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty"`
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	// TickPolicy is delay, catchup or discard.
	// +optional
	TickPolicy PITTickPolicy `json:"tickPolicy,omitempty"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty"`
}

// KVMTimer is kvmclock.
type KVMTimer struct {
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty"`
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty"`
}

// FeatureAPIC is the guest's local APIC.
type FeatureAPIC struct {
	FeatureState `json:",inline"`
	// EndOfInterrupt enables the EOI notification of the paravirtual APIC.
	// +optional
	EndOfInterrupt bool `json:"endOfInterrupt,omitempty"`
}

// FeatureSpinlocks is the Hyper-V spinlock retry count.
type FeatureSpinlocks struct {
	FeatureState `json:",inline"`
	// Spinlocks is how often the guest retries before it notifies the hypervisor: at least
	// 4096, the default.
	// +optional
	Spinlocks *uint32 `json:"spinlocks,omitempty"`
}

// FeatureVendorID is the hypervisor vendor ID the guest sees.
type FeatureVendorID struct {
	FeatureState `json:",inline"`
	// Vendorid is at most twelve characters.
	// +optional
	Vendorid string `json:"vendorid,omitempty"`
}

// SyNICTimer is the synthetic interrupt controller's timers.
type SyNICTimer struct {
	FeatureState `json:",inline"`
	// Direct delivers timer expirations as interrupts.
	// +optional
	Direct *FeatureState `json:"direct,omitempty"`
}

// TLBFlush is the paravirtual TLB flush.
type TLBFlush struct {
	FeatureState `json:",inline"`
	// Direct sends flushes to the hypervisor directly.
	// +optional
	Direct *FeatureState `json:"direct,omitempty"`
	// Extended allows partial flushes.
	// +optional
	Extended *FeatureState `json:"extended,omitempty"`
}

// FeatureHyperv are the Hyper-V enlightenments (KVM only).
type FeatureHyperv struct {
	// Relaxed turns off the guest's watchdog timeouts, which a preempted vCPU would trip.
	// +optional
	Relaxed *FeatureState `json:"relaxed,omitempty"`
	// VAPIC is the paravirtual APIC: fewer exits for interrupts.
	// +optional
	VAPIC *FeatureState `json:"vapic,omitempty"`
	// Spinlocks is how often the guest retries a spinlock before it notifies the hypervisor.
	// +optional
	Spinlocks *FeatureSpinlocks `json:"spinlocks,omitempty"`
	// Vpindex lets the guest identify its virtual processors.
	// +optional
	Vpindex *FeatureState `json:"vpindex,omitempty"`
	// Runtime reports the time the guest's vCPUs ran, for its scheduler.
	// +optional
	Runtime *FeatureState `json:"runtime,omitempty"`
	// Synic is the synthetic interrupt controller. Needs vpindex.
	// +optional
	Synic *FeatureState `json:"synic,omitempty"`
	// Synictimer are the synthetic timers (stimer). Needs synic.
	// +optional
	Synictimer *SyNICTimer `json:"synictimer,omitempty"`
	// Reset lets the guest reset itself through Hyper-V.
	// +optional
	Reset *FeatureState `json:"reset,omitempty"`
	// Vendorid is the hypervisor vendor ID the guest sees.
	// +optional
	Vendorid *FeatureVendorID `json:"vendorid,omitempty"`
	// Frequencies tells the guest the TSC and APIC frequencies.
	// +optional
	Frequencies *FeatureState `json:"frequencies,omitempty"`
	// Reenlightenment notifies the guest when the TSC frequency changes (after a migration).
	// +optional
	Reenlightenment *FeatureState `json:"reenlightenment,omitempty"`
	// Tlbflush is the paravirtual TLB flush. Needs vpindex.
	// +optional
	Tlbflush *TLBFlush `json:"tlbflush,omitempty"`
	// IPI is the paravirtual inter-processor interrupt. Needs vpindex.
	// +optional
	IPI *FeatureState `json:"ipi,omitempty"`
	// EVMCS is the enlightened VMCS for nested guests. Needs vapic and the vmx CPU feature.
	// +optional
	EVMCS *FeatureState `json:"evmcs,omitempty"`
}

// FeatureKVM says how KVM shows itself to the guest.
type FeatureKVM struct {
	// Hidden hides KVM from the guest's CPUID.
	// +optional
	Hidden bool `json:"hidden,omitempty"`
}

// CPUFeature adds a CPU feature to the model, or removes it.
type CPUFeature struct {
	// Name of the feature, as libvirt names it (for example vmx, pcid).
	Name string `json:"name"`
	// Policy is force, require, optional, disable or forbid. Defaults to require.
	// +optional
	Policy string `json:"policy,omitempty"`
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
	// +optional
	Bus InputBus `json:"bus,omitempty"`
	// Type is tablet.
	Type InputType `json:"type"`
	// Name of the device.
	Name string `json:"name"`
}

// TPMDevice is an emulated TPM 2.0 (swtpm).
type TPMDevice struct {
	// Enabled false removes the TPM. Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Persistent keeps the TPM's state across restarts of the VM, in the VM's state claim.
	// +optional
	Persistent *bool `json:"persistent,omitempty"`
}
