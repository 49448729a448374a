package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// How big a guest is, counted one way by every component: defaulting, the launcher pod's
// resources, the domain and the metrics.

// VCPUs is the guest's number of virtual CPUs: cores × sockets × threads, an unset factor
// counting as 1, 1 without a topology; saturates at math.MaxInt64 (kubevirt.VCPUCount).
func (c *CPU) VCPUs() int64 {
	if c == nil {
		return 1
	}
	return kubevirt.VCPUCount(c.Cores, c.Sockets, c.Threads)
}

// VCPUs is the guest's number of virtual CPUs (CPU.VCPUs).
func (d *DomainSpec) VCPUs() int64 { return d.CPU.VCPUs() }

// GuestMemory is the memory the guest sees: memory.guest, else the memory request, else the
// limit; false when the spec names none (validation refuses that).
func (d *DomainSpec) GuestMemory() (resource.Quantity, bool) {
	if d.Memory != nil && d.Memory.Guest != nil {
		return *d.Memory.Guest, true
	}
	if q, ok := d.Resources.Requests[corev1.ResourceMemory]; ok {
		return q, true
	}
	if q, ok := d.Resources.Limits[corev1.ResourceMemory]; ok {
		return q, true
	}
	return resource.Quantity{}, false
}
