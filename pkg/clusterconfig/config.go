// Package clusterconfig is Hangar's cluster configuration: the ConfigMap hangar-config, which
// virt-controller builds launcher pods and migrates by and virt-api admits them by. Both watch
// it (package watch), so a change (say, turning on software emulation) applies to the next
// launcher pod without a restart. It does not import client-go, so the launcher pod builder,
// which takes a ClusterConfig, builds without it (the fuzz tests instrument every dependency).
package clusterconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// ConfigMap keys.
const (
	// KeyUseEmulation ("true"/"false") runs guests under QEMU's TCG instead of KVM; launcher
	// pods then do not ask for the KVM device.
	KeyUseEmulation = "useEmulation"
	// KeyLauncherImage is the virt-launcher image of new launcher pods.
	KeyLauncherImage = "launcherImage"
	// KeyMemoryOverhead is a quantity added to the guest memory in the launcher pod's request.
	KeyMemoryOverhead = "memoryOverhead"
	// KeyNodeUnresponsiveGracePeriod is how long a node may not be Ready before its
	// instances fail with NodeUnresponsive (a duration, default 1m).
	KeyNodeUnresponsiveGracePeriod = "nodeUnresponsiveGracePeriod"
	// KeyCPUAllocationRatio is how many vCPUs share one requested CPU when the instance
	// requests no CPU itself (KubeVirt's cpuAllocationRatio, default 10: 100m per vCPU).
	KeyCPUAllocationRatio = "cpuAllocationRatio"
	// KeyVMStateStorageClass is the StorageClass of the state claims virt-controller creates
	// for VMs that keep EFI variables or TPM state (KubeVirt's vmStateStorageClass); unset:
	// the cluster's default class.
	KeyVMStateStorageClass = "vmStateStorageClass"
	// KeyFeatureGates is a comma-separated list of KubeVirt feature gate names
	// (developerConfiguration.featureGates); Hangar acts on FeatureGateImageVolume and has
	// the other features it implements on without a gate, so it accepts any name.
	KeyFeatureGates = "featureGates"
	// KeyLauncherDevicesOnly ("true"/"false") keeps Hangar's devices for its launcher pods: the
	// release manifest's ValidatingAdmissionPolicy hangar-launcher-devices reads it from
	// hangar-config and refuses other pods that ask for them.
	KeyLauncherDevicesOnly = "launcherDevicesOnly"
)

// FeatureGateImageVolume makes launcher pods mount containerDisk and kernelBoot images as
// image volumes (Kubernetes' ImageVolume, which the cluster's API server, kubelets and
// runtime must have) instead of copying their files in init containers.
const FeatureGateImageVolume = "ImageVolume"

// DefaultMemoryOverhead is the fixed part of what a launcher pod needs beside the guest's
// memory (launcherpod.MemoryOverhead adds what grows with the guest): the launcher process,
// libvirtd and QEMU itself (device emulation, TCG translation cache, I/O buffers).
// Measure it as the launcher container's working set (cgroup memory.usage_in_bytes minus
// page cache, or kubectl top) with a small guest booted to a login prompt, minus the guest
// memory size; take the maximum over several runs and round up. KubeVirt's estimate for a
// small guest is of the same order.
var DefaultMemoryOverhead = resource.MustParse("180Mi")

// DefaultLauncherImage is the launcher image when neither the flag nor the ConfigMap names one.
const DefaultLauncherImage = "hangar/virt-launcher:latest"

// ClusterConfig is the configuration in effect.
type ClusterConfig struct {
	UseEmulation       bool
	LauncherImage      string
	MemoryOverhead     resource.Quantity
	CPUAllocationRatio int
	// NodeUnresponsiveGracePeriod: see KeyNodeUnresponsiveGracePeriod.
	NodeUnresponsiveGracePeriod time.Duration
	// EvictionStrategy: see KeyEvictionStrategy; empty when unset.
	EvictionStrategy v1.EvictionStrategy
	// Migrations: see KeyMigrations (migrations.go); every field is set.
	Migrations v1.MigrationConfiguration
	// VMStateStorageClass: see KeyVMStateStorageClass; empty when unset.
	VMStateStorageClass string
	// ImageVolumes: FeatureGateImageVolume is in KeyFeatureGates.
	ImageVolumes bool
	// WorkloadUpdates: see workloadupdates.go.
	WorkloadUpdates WorkloadUpdates
	// LauncherDevicesOnly: see KeyLauncherDevicesOnly.
	LauncherDevicesOnly bool
}

// Defaults is the configuration without a ConfigMap.
func Defaults() ClusterConfig {
	return ClusterConfig{
		LauncherImage:      DefaultLauncherImage,
		MemoryOverhead:     DefaultMemoryOverhead,
		CPUAllocationRatio: 10,
		// The node's heartbeat is missed after the controller manager's
		// node-monitor-grace-period (50 s by default, later than KubeVirt's 5 minutes of
		// virt-handler heartbeat): a minute more of silence is not a hiccup.
		NodeUnresponsiveGracePeriod: time.Minute,
		Migrations:                  DefaultMigrations(),
		WorkloadUpdates:             DefaultWorkloadUpdates(),
	}
}

// Parse applies the ConfigMap's data over base. A key with a bad value keeps base's value and
// is reported, so a typo degrades one setting instead of stopping the controller.
func Parse(data map[string]string, base ClusterConfig) (ClusterConfig, []error) {
	c := base
	var errs []error
	if v, ok := data[KeyUseEmulation]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", KeyUseEmulation, err))
		} else {
			c.UseEmulation = b
		}
	}
	if v, ok := data[KeyLauncherImage]; ok && v != "" {
		c.LauncherImage = v
	}
	if v, ok := data[KeyLauncherDevicesOnly]; ok {
		// The admission policy reads the very string: only "true" turns it on.
		if v != "true" && v != "false" {
			errs = append(errs, fmt.Errorf("%s: %q is neither true nor false", KeyLauncherDevicesOnly, v))
		} else {
			c.LauncherDevicesOnly = v == "true"
		}
	}
	if v, ok := data[KeyVMStateStorageClass]; ok {
		if msgs := validation.IsDNS1123Subdomain(v); v != "" && len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q is no StorageClass name: %s", KeyVMStateStorageClass, v, strings.Join(msgs, "; ")))
		} else {
			c.VMStateStorageClass = v
		}
	}
	if v, ok := data[KeyFeatureGates]; ok {
		c.ImageVolumes = false
		for _, gate := range strings.Split(v, ",") {
			if strings.TrimSpace(gate) == FeatureGateImageVolume {
				c.ImageVolumes = true
			}
		}
	}
	if v, ok := data[KeyMemoryOverhead]; ok {
		q, err := resource.ParseQuantity(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", KeyMemoryOverhead, err))
		case q.Sign() < 0:
			errs = append(errs, fmt.Errorf("%s: must not be negative", KeyMemoryOverhead))
		default:
			c.MemoryOverhead = q
		}
	}
	if v, ok := data[KeyNodeUnresponsiveGracePeriod]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration", KeyNodeUnresponsiveGracePeriod, v))
		} else {
			c.NodeUnresponsiveGracePeriod = d
		}
	}
	if v, ok := data[KeyCPUAllocationRatio]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive integer", KeyCPUAllocationRatio, v))
		} else {
			c.CPUAllocationRatio = n
		}
	}
	for _, parse := range []func(map[string]string, *ClusterConfig) error{parseEvictionStrategy, parseMigrations, parseWorkloadUpdates} {
		if err := parse(data, &c); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errs
}

// Store holds the configuration in effect; readers never block.
type Store struct {
	base    ClusterConfig
	current atomic.Pointer[ClusterConfig]

	mu        sync.Mutex
	listeners []func()
}

// OnChange calls f after every change of the configuration: for a controller whose work
// depends on it (the launcher image of the workload updates) and that no object's change
// would otherwise wake.
func (s *Store) OnChange(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

// NewStore returns a store holding base until a ConfigMap is seen.
func NewStore(base ClusterConfig) *Store {
	s := &Store{base: base}
	c := base
	s.current.Store(&c)
	return s
}

// Get returns the configuration in effect; callers must not modify it.
func (s *Store) Get() *ClusterConfig { return s.current.Load() }

// Apply makes the ConfigMap's data the configuration; nil (the ConfigMap is gone) restores the base.
func (s *Store) Apply(cm *corev1.ConfigMap) {
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	c, errs := Parse(data, s.base)
	for _, err := range errs {
		klog.ErrorS(err, "Ignoring bad cluster configuration value", "configmap", klog.KObj(cm))
	}
	s.current.Store(&c)
	s.mu.Lock()
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, f := range listeners {
		f()
	}
	klog.V(2).InfoS("Cluster configuration", "useEmulation", c.UseEmulation, "launcherImage", c.LauncherImage,
		"memoryOverhead", c.MemoryOverhead.String(), "imageVolumes", c.ImageVolumes)
}
