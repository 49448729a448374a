package validation

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// The bounds on what a user sets. Each accepts what KubeVirt's validating webhook accepts,
// unless Hangar cannot run it: a value past a bound would fail (or overflow) later, on the
// node or in the launcher pod, where the user learns of it only from an event.
var (
	// MinGuestMemory is the smallest guest KubeVirt accepts (requests.memory ≥ 1M); a guest
	// kernel needs far more, but that is the guest's business.
	MinGuestMemory = resource.MustParse("1Mi")
	// MaxGuestMemory bounds memory.guest and the memory requests and limits (the launcher
	// pod asks for them plus the overhead). 16 TiB is more memory than any node Hangar runs
	// on has, and keeps every figure derived from it (bytes plus overhead in an int64, KiB
	// in libvirt's <memory>) far from overflowing; quantities such as 1e30 would not.
	MaxGuestMemory = resource.MustParse("16Ti")
	// MaxCPU bounds requests.cpu and limits.cpu: one CPU per vCPU of the largest guest.
	// Defaulting derives cores from them when the spec has no topology, so a larger value
	// would make a guest QEMU cannot start (and 1e18 CPUs overflows the milli-CPU count).
	MaxCPU = *resource.NewQuantity(MaxVCPUs, resource.DecimalSI)
	// MaxEmptyDiskCapacity bounds emptyDisk.capacity. The launcher creates the disk as a
	// sparse file on the node's filesystem; 16 TiB is ext4's largest file (4 KiB blocks),
	// and larger quantities overflow the int64 byte count the file is truncated to.
	MaxEmptyDiskCapacity = resource.MustParse("16Ti")
)

const (
	// MaxVCPUs bounds cores × sockets × threads. The launcher runs Debian 12's QEMU 7.2, whose
	// q35 machine (the only machine type accepted, see supportedMachineTypes) refuses more
	// than 288 vCPUs. The product is computed without overflow: 2^21 each of cores, sockets
	// and threads multiply to 2^63, which wrapped the launcher pod's CPU request to 0.
	MaxVCPUs = 288
	// MaxTerminationGracePeriodSeconds is one year. KubeVirt and pods take any non-negative
	// int64, but the launcher pod's grace period adds launcherpod.GracePeriodMargin and the
	// launcher, the kubelet and the API server turn it into a time.Duration (at most ~292
	// years in nanoseconds) added to now; math.MaxInt64 overflowed both. A guest that needs
	// longer than a year to shut down is a mistake, not a workload.
	MaxTerminationGracePeriodSeconds int64 = 365 * 24 * 60 * 60
	// MaxBootOrder bounds a disk's or interface's bootOrder: libvirt hands it to QEMU as the
	// device's bootindex, an int32 (libvirt itself reads an unsigned int, so a larger uint
	// from the spec fails on the node).
	MaxBootOrder = math.MaxInt32
	// MaxSerialLength bounds the firmware and disk serial numbers, as KubeVirt does.
	MaxSerialLength = 256
	// MaxContainerDiskVolumeName: the volume's init container, container-disk-<volume>, must
	// be a DNS label (63 characters), so the volume name has 48.
	MaxContainerDiskVolumeName = layout.MaxContainerDiskVolumeName
	// MaxCloudInitUserData and MaxCloudInitNetworkData bound inline cloud-init data in bytes
	// (decoded, for the base64 forms), as KubeVirt's webhook does: every instance, and every
	// VM's and replica set's template, carries it into etcd, every watch and every node's
	// cache of instances, so larger data belongs in a Secret (secretRef, networkDataSecretRef),
	// which only the launcher pod's node fetches.
	MaxCloudInitUserData    = 2048
	MaxCloudInitNetworkData = 2048
	// MaxDevices bounds the lists of volumes, disks, networks and interfaces, as KubeVirt's
	// webhook does (256 each).
	MaxDevices = 256
)
