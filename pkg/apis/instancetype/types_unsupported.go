package instancetype

import "github.com/hangarvm/hangar/pkg/apis/kubevirt"

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
	Name string
	// DeviceName is the resource name of the device plugin that provides it.
	DeviceName string
	// ClaimName is a resource claim of the launcher pod that provides it (dynamic resource
	// allocation).
	ClaimName *string
	// RequestName is the request of that claim.
	RequestName *string
	// VirtualGPUOptions are the options of a virtual GPU.
	VirtualGPUOptions *VGPUOptions
	// Tag is the device's tag for the guest's device role tagging.
	Tag string
}

// HostDevice is a host device passed to the guest.
type HostDevice struct {
	// Name of the device.
	Name string
	// DeviceName is the resource name of the device plugin that provides it.
	DeviceName string
	// ClaimName is a resource claim of the launcher pod that provides it.
	ClaimName *string
	// RequestName is the request of that claim.
	RequestName *string
	// Tag is the device's tag for the guest's device role tagging.
	Tag string
}

// VGPUOptions are the options of a virtual GPU.
type VGPUOptions struct {
	// Display is the virtual GPU's display.
	Display *VGPUDisplayOptions
}

// VGPUDisplayOptions are the options of a virtual GPU's display.
type VGPUDisplayOptions struct {
	// Enabled turns the display on.
	Enabled *bool
	// RamFB is the boot framebuffer.
	RamFB *kubevirt.FeatureState
}

// NUMA is the guest's NUMA topology.
type NUMA struct {
	// GuestMappingPassthrough mirrors the host's NUMA cells of the pinned vCPUs to the guest.
	GuestMappingPassthrough *NUMAGuestMappingPassthrough
}

// NUMAGuestMappingPassthrough mirrors the host's NUMA topology.
type NUMAGuestMappingPassthrough struct{}

// Realtime tunes the guest for low latency.
type Realtime struct {
	// Mask is the vCPUs to tune (a libvirt cpuset); all when empty.
	Mask string
}

// Hugepages backs the guest's memory with huge pages.
type Hugepages struct {
	// PageSize is the huge page size, such as 2Mi or 1Gi.
	PageSize string
}

// IOThreadsPolicy says how disks share I/O threads.
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
	SupplementalPoolThreadCount *uint32
}

// LaunchSecurity is memory encryption.
type LaunchSecurity struct {
	// SEV is AMD Secure Encrypted Virtualization.
	SEV *SEV
}

// SEV is AMD Secure Encrypted Virtualization.
type SEV struct {
	// Policy is the guest's SEV policy.
	Policy *SEVPolicy
	// Attestation asks for the launch measurement to be attested.
	Attestation *SEVAttestation
	// Session is the base64 session blob of the guest owner.
	Session string
	// DHCert is the base64 Diffie-Hellman certificate of the guest owner.
	DHCert string
}

// SEVPolicy is a guest's SEV policy.
type SEVPolicy struct {
	// EncryptedState encrypts the CPU registers too (SEV-ES).
	EncryptedState *bool
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
	Custom *CustomBlockSize
	// MatchVolume takes the block size of the volume.
	MatchVolume *kubevirt.FeatureState
}

// CustomBlockSize is a disk's logical and physical block size.
type CustomBlockSize struct {
	// Logical block size in bytes.
	Logical uint
	// Physical block size in bytes.
	Physical uint
}

// PanicDeviceModel is the model of a panic device: hyperv, isa or pvpanic.
type PanicDeviceModel string
