package v1

// The hardware that guests from other hypervisors expect: firmware (BIOS or EFI with Secure
// Boot), a TPM, the clock and its timers, Hyper-V enlightenments, input devices. The names
// and semantics are KubeVirt's.

// Bootloader is the firmware a guest boots with; at most one member is set.
type Bootloader struct {
	// BIOS is SeaBIOS, the default.
	// +optional
	BIOS *BIOS `json:"bios,omitempty" protobuf:"bytes,1,opt,name=bios"`
	// EFI is OVMF.
	// +optional
	EFI *EFI `json:"efi,omitempty" protobuf:"bytes,2,opt,name=efi"`
}

// BIOS is the SeaBIOS firmware.
type BIOS struct {
	// UseSerial sends the BIOS's output to the serial console.
	// +optional
	UseSerial *bool `json:"useSerial,omitempty" protobuf:"varint,1,opt,name=useSerial"`
}

// EFI is the OVMF firmware.
type EFI struct {
	// SecureBoot boots only signed boot loaders, with Microsoft's and the distribution's keys
	// enrolled. Needs SMM. Defaults to true.
	// +optional
	SecureBoot *bool `json:"secureBoot,omitempty" protobuf:"varint,1,opt,name=secureBoot"`
	// Persistent keeps the EFI variables (NVRAM) across restarts of the VM, in the VM's state
	// claim. Defaults to false.
	// +optional
	Persistent *bool `json:"persistent,omitempty" protobuf:"varint,2,opt,name=persistent"`
}

// ClockOffset is the guest clock's offset; at most one member is set.
type ClockOffset struct {
	// UTC sets the guest clock to UTC at boot, shifted by OffsetSeconds.
	// +optional
	UTC *ClockOffsetUTC `json:"utc,omitempty" protobuf:"bytes,1,opt,name=utc"`
	// Timezone sets the guest clock to local time in a time zone (TZ syntax).
	// +optional
	Timezone *ClockOffsetTimezone `json:"timezone,omitempty" protobuf:"bytes,2,opt,name=timezone,casttype=ClockOffsetTimezone"`
}

// ClockOffsetUTC sets the guest clock to UTC at each boot.
type ClockOffsetUTC struct {
	// OffsetSeconds shifts the guest clock from UTC; changes the guest makes then persist
	// across its reboots.
	// +optional
	OffsetSeconds *int `json:"offsetSeconds,omitempty" protobuf:"varint,1,opt,name=offsetSeconds,casttype=int"`
}

// ClockOffsetTimezone is a time zone name such as Europe/Paris.
type ClockOffsetTimezone string

// Clock is the guest's real-time clock and timers.
type Clock struct {
	ClockOffset `json:",inline" protobuf:"bytes,1,opt,name=clockOffset"`
	// Timer configures the guest's timers.
	// +optional
	Timer *Timer `json:"timer,omitempty" protobuf:"bytes,2,opt,name=timer"`
}

// Timer configures a guest's timers; unset members keep the machine type's.
type Timer struct {
	// HPET is the high precision event timer.
	// +optional
	HPET *HPETTimer `json:"hpet,omitempty" protobuf:"bytes,1,opt,name=hpet"`
	// KVM is kvmclock, the paravirtual clock of Linux guests (KVM only).
	// +optional
	KVM *KVMTimer `json:"kvm,omitempty" protobuf:"bytes,2,opt,name=kvm"`
	// PIT is the programmable interval timer.
	// +optional
	PIT *PITTimer `json:"pit,omitempty" protobuf:"bytes,3,opt,name=pit"`
	// RTC is the real-time clock.
	// +optional
	RTC *RTCTimer `json:"rtc,omitempty" protobuf:"bytes,4,opt,name=rtc"`
	// Hyperv is the Hyper-V reference clock of Windows guests (KVM only).
	// +optional
	Hyperv *HypervTimer `json:"hyperv,omitempty" protobuf:"bytes,5,opt,name=hyperv"`
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
	TickPolicy RTCTickPolicy `json:"tickPolicy,omitempty" protobuf:"bytes,1,opt,name=tickPolicy,casttype=RTCTickPolicy"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty" protobuf:"varint,2,opt,name=present"`
	// Track is guest or wall.
	// +optional
	Track RTCTimerTrack `json:"track,omitempty" protobuf:"bytes,3,opt,name=track,casttype=RTCTimerTrack"`
}

// HPETTimer is the high precision event timer.
type HPETTimer struct {
	// TickPolicy is delay, catchup, merge or discard.
	// +optional
	TickPolicy HPETTickPolicy `json:"tickPolicy,omitempty" protobuf:"bytes,1,opt,name=tickPolicy,casttype=HPETTickPolicy"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty" protobuf:"varint,2,opt,name=present"`
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	// TickPolicy is delay, catchup or discard.
	// +optional
	TickPolicy PITTickPolicy `json:"tickPolicy,omitempty" protobuf:"bytes,1,opt,name=tickPolicy,casttype=PITTickPolicy"`
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty" protobuf:"varint,2,opt,name=present"`
}

// KVMTimer is kvmclock.
type KVMTimer struct {
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty" protobuf:"varint,1,opt,name=present"`
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	// Present false removes the timer. Defaults to true.
	// +optional
	Present *bool `json:"present,omitempty" protobuf:"varint,1,opt,name=present"`
}

// FeatureAPIC is the guest's local APIC.
type FeatureAPIC struct {
	FeatureState `json:",inline" protobuf:"bytes,1,opt,name=featureState"`
	// EndOfInterrupt enables the EOI notification of the paravirtual APIC.
	// +optional
	EndOfInterrupt bool `json:"endOfInterrupt,omitempty" protobuf:"varint,2,opt,name=endOfInterrupt"`
}

// FeatureSpinlocks is the Hyper-V spinlock retry count.
type FeatureSpinlocks struct {
	FeatureState `json:",inline" protobuf:"bytes,1,opt,name=featureState"`
	// Spinlocks is how often the guest retries before it notifies the hypervisor: at least
	// 4096, the default.
	// +optional
	Spinlocks *uint32 `json:"spinlocks,omitempty" protobuf:"varint,2,opt,name=spinlocks"`
}

// FeatureVendorID is the hypervisor vendor ID the guest sees.
type FeatureVendorID struct {
	FeatureState `json:",inline" protobuf:"bytes,1,opt,name=featureState"`
	// Vendorid is at most twelve characters.
	// +optional
	Vendorid string `json:"vendorid,omitempty" protobuf:"bytes,2,opt,name=vendorid"`
}

// SyNICTimer is the synthetic interrupt controller's timers.
type SyNICTimer struct {
	FeatureState `json:",inline" protobuf:"bytes,1,opt,name=featureState"`
	// Direct delivers timer expirations as interrupts.
	// +optional
	Direct *FeatureState `json:"direct,omitempty" protobuf:"bytes,2,opt,name=direct"`
}

// TLBFlush is the paravirtual TLB flush.
type TLBFlush struct {
	FeatureState `json:",inline" protobuf:"bytes,1,opt,name=featureState"`
	// Direct sends flushes to the hypervisor directly.
	// +optional
	Direct *FeatureState `json:"direct,omitempty" protobuf:"bytes,2,opt,name=direct"`
	// Extended allows partial flushes.
	// +optional
	Extended *FeatureState `json:"extended,omitempty" protobuf:"bytes,3,opt,name=extended"`
}

// FeatureHyperv are the Hyper-V enlightenments (KVM only).
type FeatureHyperv struct {
	// Relaxed turns off the guest's watchdog timeouts, which a preempted vCPU would trip.
	// +optional
	Relaxed *FeatureState `json:"relaxed,omitempty" protobuf:"bytes,1,opt,name=relaxed"`
	// VAPIC is the paravirtual APIC: fewer exits for interrupts.
	// +optional
	VAPIC *FeatureState `json:"vapic,omitempty" protobuf:"bytes,2,opt,name=vapic"`
	// Spinlocks is how often the guest retries a spinlock before it notifies the hypervisor.
	// +optional
	Spinlocks *FeatureSpinlocks `json:"spinlocks,omitempty" protobuf:"bytes,3,opt,name=spinlocks"`
	// Vpindex lets the guest identify its virtual processors.
	// +optional
	Vpindex *FeatureState `json:"vpindex,omitempty" protobuf:"bytes,4,opt,name=vpindex"`
	// Runtime reports the time the guest's vCPUs ran, for its scheduler.
	// +optional
	Runtime *FeatureState `json:"runtime,omitempty" protobuf:"bytes,5,opt,name=runtime"`
	// Synic is the synthetic interrupt controller. Needs vpindex.
	// +optional
	Synic *FeatureState `json:"synic,omitempty" protobuf:"bytes,6,opt,name=synic"`
	// Synictimer are the synthetic timers (stimer). Needs synic.
	// +optional
	Synictimer *SyNICTimer `json:"synictimer,omitempty" protobuf:"bytes,7,opt,name=synictimer"`
	// ResetFeature (reset) lets the guest reset itself through Hyper-V; not named Reset,
	// which protobuf's generated code has as a method.
	// +optional
	ResetFeature *FeatureState `json:"reset,omitempty" protobuf:"bytes,8,opt,name=reset"`
	// Vendorid is the hypervisor vendor ID the guest sees.
	// +optional
	Vendorid *FeatureVendorID `json:"vendorid,omitempty" protobuf:"bytes,9,opt,name=vendorid"`
	// Frequencies tells the guest the TSC and APIC frequencies.
	// +optional
	Frequencies *FeatureState `json:"frequencies,omitempty" protobuf:"bytes,10,opt,name=frequencies"`
	// Reenlightenment notifies the guest when the TSC frequency changes (after a migration).
	// +optional
	Reenlightenment *FeatureState `json:"reenlightenment,omitempty" protobuf:"bytes,11,opt,name=reenlightenment"`
	// Tlbflush is the paravirtual TLB flush. Needs vpindex.
	// +optional
	Tlbflush *TLBFlush `json:"tlbflush,omitempty" protobuf:"bytes,12,opt,name=tlbflush"`
	// IPI is the paravirtual inter-processor interrupt. Needs vpindex.
	// +optional
	IPI *FeatureState `json:"ipi,omitempty" protobuf:"bytes,13,opt,name=ipi"`
	// EVMCS is the enlightened VMCS for nested guests. Needs vapic and the vmx CPU feature.
	// +optional
	EVMCS *FeatureState `json:"evmcs,omitempty" protobuf:"bytes,14,opt,name=evmcs"`
}

// FeatureKVM says how KVM shows itself to the guest.
type FeatureKVM struct {
	// Hidden hides KVM from the guest's CPUID.
	// +optional
	Hidden bool `json:"hidden,omitempty" protobuf:"varint,1,opt,name=hidden"`
}

// CPUFeature adds a CPU feature to the model, or removes it.
type CPUFeature struct {
	// Name of the feature, as libvirt names it (for example vmx, pcid).
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Policy is force, require, optional, disable or forbid. Defaults to require.
	// +optional
	Policy string `json:"policy,omitempty" protobuf:"bytes,2,opt,name=policy"`
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
	Bus InputBus `json:"bus,omitempty" protobuf:"bytes,1,opt,name=bus,casttype=InputBus"`
	// Type is tablet.
	Type InputType `json:"type" protobuf:"bytes,2,opt,name=type,casttype=InputType"`
	// Name of the device.
	Name string `json:"name" protobuf:"bytes,3,opt,name=name"`
}

// TPMDevice is an emulated TPM 2.0 (swtpm).
type TPMDevice struct {
	// Enabled false removes the TPM. Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
	// Persistent keeps the TPM's state across restarts of the VM, in the VM's state claim.
	// +optional
	Persistent *bool `json:"persistent,omitempty" protobuf:"varint,2,opt,name=persistent"`
}
