package render

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
)

// Images are the component images of one version, pinned by digest in a release.
type Images struct {
	VirtAPI, VirtController, VirtHandler, VirtLauncher, Etcd string
}

// Validate says which image is missing.
func (i Images) Validate() error {
	for name, ref := range map[string]string{"virt-api": i.VirtAPI, "virt-controller": i.VirtController,
		"virt-handler": i.VirtHandler, "virt-launcher": i.VirtLauncher, "etcd": i.Etcd} {
		if ref == "" {
			return fmt.Errorf("no %s image", name)
		}
	}
	return nil
}

// Settings is everything the objects depend on.
type Settings struct {
	// Version is the operator's, which it installs.
	Version string
	Images  Images
	Spec    operatorv1alpha1.HangarSpec
	// LauncherImage is what hangar-config names for new launcher pods: the previous version's
	// until every handler runs this version (PhaseLaunchers), then Images.VirtLauncher.
	LauncherImage string
	// CABundle is the CA bundle of virt-api's serving certificate: the APIServices' and the
	// eviction webhook's caBundle.
	CABundle []byte
	// TrustHashes restart the pods of a component (by its Deployment, StatefulSet or
	// DaemonSet name) when a CA bundle it reads only at start changes.
	TrustHashes map[string]string
	// Served are the kinds of other projects' CustomResourceDefinitions (the Prometheus
	// Operator's PodMonitor and PrometheusRule) that the cluster serves, as discovery says
	// (apply.Served): monitoring objects of a kind missing here are not rendered, since the API
	// would refuse them. The dashboard's ConfigMap needs nothing and is always rendered.
	Served map[schema.GroupVersionKind]bool
}

// Defaults of the Hangar object's settings.
const (
	DefaultReplicas     int32 = 2
	DefaultEtcdReplicas int32 = 1
)

// DefaultEtcdQuota is etcd's space quota when the object sets none.
var DefaultEtcdQuota = resource.MustParse("4Gi")

// EtcdVolume is the size of each etcd member's volume: spec.etcd.storage, else the quota and
// a quarter, so that the volume fills only after the quota refuses writes.
func EtcdVolume(spec operatorv1alpha1.EtcdSpec) (quota, volume resource.Quantity) {
	quota = DefaultEtcdQuota
	if spec.QuotaBackendBytes != nil {
		quota = *spec.QuotaBackendBytes
	}
	if spec.Storage != nil {
		return quota, *spec.Storage
	}
	return quota, *resource.NewQuantity(quota.Value()+quota.Value()/4, resource.BinarySI)
}

// ValidateSpec refuses what the CustomResourceDefinition's schema cannot: an etcd volume
// smaller than its quota, and settings the components would not take.
func ValidateSpec(spec operatorv1alpha1.HangarSpec) error {
	quota, volume := EtcdVolume(spec.Etcd)
	if quota.Sign() <= 0 {
		return fmt.Errorf("spec.etcd.quotaBackendBytes: must be positive")
	}
	if volume.Cmp(quota) < 0 {
		return fmt.Errorf("spec.etcd.storage: %s is smaller than etcd's quota %s (spec.etcd.quotaBackendBytes)", volume.String(), quota.String())
	}
	data, err := ConfigData(spec, "")
	if err != nil {
		return err
	}
	if _, errs := clusterconfig.Parse(data, clusterconfig.Defaults()); len(errs) > 0 {
		return fmt.Errorf("spec.configuration: %v", errs)
	}
	return nil
}

// ConfigData is the data of the ConfigMap hangar-config for a spec: its configuration and its
// workload update strategy.
func ConfigData(spec operatorv1alpha1.HangarSpec, launcherImage string) (map[string]string, error) {
	c := spec.Configuration
	data := map[string]string{clusterconfig.KeyUseEmulation: "false",
		clusterconfig.KeyLauncherDevicesOnly: strconv.FormatBool(c.LauncherDevicesOnly)}
	if launcherImage != "" {
		data[clusterconfig.KeyLauncherImage] = launcherImage
	}
	if d := c.DeveloperConfiguration; d != nil {
		data[clusterconfig.KeyUseEmulation] = strconv.FormatBool(d.UseEmulation)
		if len(d.FeatureGates) > 0 {
			data[clusterconfig.KeyFeatureGates] = strings.Join(d.FeatureGates, ",")
		}
		if d.CPUAllocationRatio != nil {
			data[clusterconfig.KeyCPUAllocationRatio] = strconv.Itoa(*d.CPUAllocationRatio)
		}
	}
	if c.Migrations != nil {
		out, err := yaml.Marshal(c.Migrations)
		if err != nil {
			return nil, fmt.Errorf("spec.configuration.migrations: %w", err)
		}
		data[clusterconfig.KeyMigrations] = string(out)
	}
	if c.EvictionStrategy != nil {
		data[clusterconfig.KeyEvictionStrategy] = string(*c.EvictionStrategy)
	}
	if c.VMStateStorageClass != "" {
		data[clusterconfig.KeyVMStateStorageClass] = c.VMStateStorageClass
	}
	if c.MemoryOverhead != nil {
		data[clusterconfig.KeyMemoryOverhead] = c.MemoryOverhead.String()
	}
	if c.NodeUnresponsiveGracePeriod != nil {
		data[clusterconfig.KeyNodeUnresponsiveGracePeriod] = c.NodeUnresponsiveGracePeriod.Duration.String()
	}
	u := spec.WorkloadUpdateStrategy
	if len(u.WorkloadUpdateMethods) > 0 {
		var methods []string
		for _, m := range u.WorkloadUpdateMethods {
			methods = append(methods, string(m))
		}
		data[clusterconfig.KeyWorkloadUpdateMethods] = strings.Join(methods, ",")
	}
	if u.BatchEvictionSize != nil {
		data[clusterconfig.KeyBatchEvictionSize] = strconv.Itoa(*u.BatchEvictionSize)
	}
	if u.BatchEvictionInterval != nil {
		data[clusterconfig.KeyBatchEvictionInterval] = u.BatchEvictionInterval.Duration.String()
	}
	return data, nil
}

// pullPolicy is the components' image pull policy.
func pullPolicy(spec operatorv1alpha1.HangarSpec) corev1.PullPolicy {
	if spec.ImagePullPolicy != "" {
		return spec.ImagePullPolicy
	}
	return corev1.PullIfNotPresent
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }
