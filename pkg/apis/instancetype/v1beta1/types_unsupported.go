package v1beta1

import kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"

// Fields of KubeVirt's instance types and preferences that name hardware Hangar's guests do
// not have (yet): GPUs and host devices, NUMA, real-time tuning, huge pages, SEV, I/O threads,
// disk cache and I/O modes, block sizes, panic devices. Their shapes are KubeVirt's, so
// KubeVirt's instance types and preferences decode (strictly) and are stored as written. A
// VirtualMachine naming an instance type that sets one of them is refused with the field
// named; a preference's value for hardware Hangar lacks is ignored (a preference only
// prefers).

// GPU is a GPU passed to the guest.
type GPU struct {
	// Name of the GPU device.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// DeviceName is the resource name of the device plugin that provides it.
	// +optional
	DeviceName string `json:"deviceName,omitempty" protobuf:"bytes,2,opt,name=deviceName"`
	// ClaimName is a resource claim of the launcher pod that provides it (dynamic resource
	// allocation).
	// +optional
	ClaimName *string `json:"claimName,omitempty" protobuf:"bytes,3,opt,name=claimName"`
	// RequestName is the request of that claim.
	// +optional
	RequestName *string `json:"requestName,omitempty" protobuf:"bytes,4,opt,name=requestName"`
	// VirtualGPUOptions are the options of a virtual GPU.
	// +optional
	VirtualGPUOptions *VGPUOptions `json:"virtualGPUOptions,omitempty" protobuf:"bytes,5,opt,name=virtualGPUOptions"`
	// Tag is the device's tag for the guest's device role tagging.
	// +optional
	Tag string `json:"tag,omitempty" protobuf:"bytes,6,opt,name=tag"`
}

// HostDevice is a host device passed to the guest.
type HostDevice struct {
	// Name of the device.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// DeviceName is the resource name of the device plugin that provides it.
	// +optional
	DeviceName string `json:"deviceName,omitempty" protobuf:"bytes,2,opt,name=deviceName"`
	// ClaimName is a resource claim of the launcher pod that provides it.
	// +optional
	ClaimName *string `json:"claimName,omitempty" protobuf:"bytes,3,opt,name=claimName"`
	// RequestName is the request of that claim.
	// +optional
	RequestName *string `json:"requestName,omitempty" protobuf:"bytes,4,opt,name=requestName"`
	// Tag is the device's tag for the guest's device role tagging.
	// +optional
	Tag string `json:"tag,omitempty" protobuf:"bytes,5,opt,name=tag"`
}

// VGPUOptions are the options of a virtual GPU.
type VGPUOptions struct {
	// Display is the virtual GPU's display.
	// +optional
	Display *VGPUDisplayOptions `json:"display,omitempty" protobuf:"bytes,1,opt,name=display"`
}

// VGPUDisplayOptions are the options of a virtual GPU's display.
type VGPUDisplayOptions struct {
	// Enabled turns the display on.
	// +optional
	Enabled *bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
	// RamFB is the boot framebuffer.
	// +optional
	RamFB *kubevirtv1.FeatureState `json:"ramFB,omitempty" protobuf:"bytes,2,opt,name=ramFB"`
}

// NUMA is the guest's NUMA topology.
type NUMA struct {
	// GuestMappingPassthrough mirrors the host's NUMA cells of the pinned vCPUs to the guest.
	// +optional
	GuestMappingPassthrough *NUMAGuestMappingPassthrough `json:"guestMappingPassthrough,omitempty" protobuf:"bytes,1,opt,name=guestMappingPassthrough"`
}

// NUMAGuestMappingPassthrough mirrors the host's NUMA topology.
type NUMAGuestMappingPassthrough struct{}

// Realtime tunes the guest for low latency.
type Realtime struct {
	// Mask is the vCPUs to tune (a libvirt cpuset); all when empty.
	// +optional
	Mask string `json:"mask,omitempty" protobuf:"bytes,1,opt,name=mask"`
}

// Hugepages backs the guest's memory with huge pages.
type Hugepages struct {
	// PageSize is the huge page size, such as 2Mi or 1Gi.
	// +optional
	PageSize string `json:"pageSize,omitempty" protobuf:"bytes,1,opt,name=pageSize"`
}

// IOThreadsPolicy says how disks share I/O threads.
// +enum
type IOThreadsPolicy string

// IOThreadsPolicy values.
const (
	IOThreadsPolicyShared           IOThreadsPolicy = "shared"
	IOThreadsPolicyAuto             IOThreadsPolicy = "auto"
	IOThreadsPolicySupplementalPool IOThreadsPolicy = "supplementalPool"
)

// DiskIOThreads sizes an I/O thread pool.
type DiskIOThreads struct {
	// SupplementalPoolThreadCount is the number of I/O threads of the supplementalPool policy.
	// +optional
	SupplementalPoolThreadCount *uint32 `json:"supplementalPoolThreadCount,omitempty" protobuf:"varint,1,opt,name=supplementalPoolThreadCount"`
}

// LaunchSecurity is memory encryption.
type LaunchSecurity struct {
	// SEV is AMD Secure Encrypted Virtualization.
	// +optional
	SEV *SEV `json:"sev,omitempty" protobuf:"bytes,1,opt,name=sev"`
}

// SEV is AMD Secure Encrypted Virtualization.
type SEV struct {
	// Policy is the guest's SEV policy.
	// +optional
	Policy *SEVPolicy `json:"policy,omitempty" protobuf:"bytes,1,opt,name=policy"`
	// Attestation asks for the launch measurement to be attested.
	// +optional
	Attestation *SEVAttestation `json:"attestation,omitempty" protobuf:"bytes,2,opt,name=attestation"`
	// Session is the base64 session blob of the guest owner.
	// +optional
	Session string `json:"session,omitempty" protobuf:"bytes,3,opt,name=session"`
	// DHCert is the base64 Diffie-Hellman certificate of the guest owner.
	// +optional
	DHCert string `json:"dhCert,omitempty" protobuf:"bytes,4,opt,name=dhCert"`
}

// SEVPolicy is a guest's SEV policy.
type SEVPolicy struct {
	// EncryptedState encrypts the CPU registers too (SEV-ES).
	// +optional
	EncryptedState *bool `json:"encryptedState,omitempty" protobuf:"varint,1,opt,name=encryptedState"`
}

// SEVAttestation asks for SEV attestation.
type SEVAttestation struct{}

// DriverCache is a disk's host cache mode: none, writethrough or writeback.
type DriverCache string

// DriverIO is QEMU's disk I/O mode: threads or native.
type DriverIO string

// BlockSize is a disk's block size.
type BlockSize struct {
	// Custom block sizes.
	// +optional
	Custom *CustomBlockSize `json:"custom,omitempty" protobuf:"bytes,1,opt,name=custom"`
	// MatchVolume takes the block size of the volume.
	// +optional
	MatchVolume *kubevirtv1.FeatureState `json:"matchVolume,omitempty" protobuf:"bytes,2,opt,name=matchVolume"`
}

// CustomBlockSize is a disk's logical and physical block size.
type CustomBlockSize struct {
	// Logical block size in bytes.
	Logical uint `json:"logical" protobuf:"varint,1,opt,name=logical,casttype=uint"`
	// Physical block size in bytes.
	Physical uint `json:"physical" protobuf:"varint,2,opt,name=physical,casttype=uint"`
}

// PanicDeviceModel is the model of a panic device: hyperv, isa or pvpanic.
type PanicDeviceModel string
