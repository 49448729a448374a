package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Name is the one Hangar object the operator reconciles; others are reported and ignored.
const Name = "hangar"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=hangar
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.observedVersion`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'hangar'",message="the Hangar object must be named hangar"

// Hangar is Hangar's installation in a cluster: one cluster-scoped object, named hangar, which
// hangar-operator turns into etcd, virt-api, virt-controller and virt-handler, their
// certificates and their configuration, and keeps so. Deleting it removes them.
type Hangar struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HangarSpec `json:"spec,omitempty"`
	// +optional
	Status HangarStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// HangarList is a list of Hangar objects.
type HangarList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Hangar `json:"items"`
}

// HangarSpec is how Hangar runs in the cluster.
type HangarSpec struct {
	// Configuration holds the components' settings: emulation, feature gates, migrations,
	// eviction. A change applies without restarting a guest.
	// +optional
	Configuration HangarConfiguration `json:"configuration,omitempty"`
	// Infra places the control plane: etcd, virt-api and virt-controller (infrastructure
	// nodes, say). Unset: any schedulable node.
	// +optional
	Infra *ComponentConfig `json:"infra,omitempty"`
	// Workloads places virt-handler, hence the nodes that may run VMs. Unset: every
	// schedulable node.
	// +optional
	Workloads *ComponentConfig `json:"workloads,omitempty"`
	// Etcd is Hangar's own etcd, which keeps the kubevirt.io objects.
	// +optional
	Etcd EtcdSpec `json:"etcd,omitempty"`
	// CertificateRotateStrategy sets the lifetimes of the certificates the operator issues;
	// each is renewed before it expires, with no failed request.
	// +optional
	CertificateRotateStrategy CertificateRotateStrategy `json:"certificateRotateStrategy,omitempty"`
	// WorkloadUpdateStrategy says how running guests move to launchers of a new version
	// after an upgrade.
	// +optional
	WorkloadUpdateStrategy WorkloadUpdateStrategy `json:"workloadUpdateStrategy,omitempty"`
	// UninstallStrategy says what deleting this object does while VMs exist:
	// BlockUninstallIfWorkloadsExist (the default) waits until they are gone,
	// RemoveWorkloads deletes them.
	// +optional
	// +kubebuilder:validation:Enum=BlockUninstallIfWorkloadsExist;RemoveWorkloads
	UninstallStrategy UninstallStrategy `json:"uninstallStrategy,omitempty"`
	// ImagePullPolicy of Hangar's components. Images are pinned by digest; the default is
	// IfNotPresent.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
}

// HangarConfiguration holds the settings the components read from the ConfigMap
// hangar/hangar-config, which the operator writes from them.
type HangarConfiguration struct {
	// DeveloperConfiguration holds KubeVirt's developer settings: emulation and feature gates.
	// +optional
	DeveloperConfiguration *DeveloperConfiguration `json:"developerConfiguration,omitempty"`
	// Migrations bounds live migrations, as KubeVirt's.
	// +optional
	Migrations *kubevirtv1.MigrationConfiguration `json:"migrations,omitempty"`
	// EvictionStrategy is the default of instances that set none: None, LiveMigrate,
	// LiveMigrateIfPossible or External.
	// +optional
	// +kubebuilder:validation:Enum=None;LiveMigrate;LiveMigrateIfPossible;External
	EvictionStrategy *kubevirtv1.EvictionStrategy `json:"evictionStrategy,omitempty"`
	// VMStateStorageClass is the StorageClass of VMs' state claims (persistent EFI variables
	// and TPM state); unset: the cluster's default class.
	// +optional
	VMStateStorageClass string `json:"vmStateStorageClass,omitempty"`
	// MemoryOverhead is added to the guest's memory in its launcher pod's request (QEMU,
	// libvirt, the launcher). Unset: the components' default.
	// +optional
	MemoryOverhead *resource.Quantity `json:"memoryOverhead,omitempty"`
	// NodeUnresponsiveGracePeriod is how long an instance on a NotReady node is given before
	// it is failed (and its VM restarted elsewhere). Unset: the components' default.
	// +optional
	NodeUnresponsiveGracePeriod *metav1.Duration `json:"nodeUnresponsiveGracePeriod,omitempty"`
	// AuthorizeWebhookCallers makes virt-api authorize the callers of its eviction webhook
	// like any other request: only a caller with post on the webhook's path gets through.
	// Set it where kube-apiserver calls webhooks with a client certificate (its admission
	// configuration); without, the path is open, as KubeVirt's.
	// +optional
	AuthorizeWebhookCallers bool `json:"authorizeWebhookCallers,omitempty"`
	// LauncherDevicesOnly keeps devices.kubevirt.io/kvm and devices.kubevirt.io/tun, which
	// virt-handler's device plugins offer on every node, for Hangar's launcher pods: kube-apiserver
	// refuses any other pod that asks for one (the ValidatingAdmissionPolicy
	// hangar-launcher-devices of the release manifest reads this from hangar-config). Unset, as
	// in KubeVirt, any pod may ask for them.
	// +optional
	LauncherDevicesOnly bool `json:"launcherDevicesOnly,omitempty"`
}

// DeveloperConfiguration holds KubeVirt's developer settings that Hangar acts on.
type DeveloperConfiguration struct {
	// UseEmulation runs guests under QEMU's TCG instead of KVM, for hosts without usable
	// KVM. Without it, Hangar is not Available until a node offers /dev/kvm.
	// +optional
	UseEmulation bool `json:"useEmulation,omitempty"`
	// FeatureGates are KubeVirt's gate names; Hangar acts on ImageVolume (containerDisk and
	// kernelBoot images mounted as image volumes, for clusters that have them).
	// +optional
	// +listType=set
	FeatureGates []string `json:"featureGates,omitempty"`
	// CPUAllocationRatio is how many vCPUs share one requested CPU; unset: 10, as KubeVirt.
	// +optional
	// +kubebuilder:validation:Minimum=1
	CPUAllocationRatio *int `json:"cpuAllocationRatio,omitempty"`
}

// ComponentConfig places a group of components, as KubeVirt's.
type ComponentConfig struct {
	// NodePlacement constrains the nodes the components' pods land on.
	// +optional
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`
	// Replicas of virt-api and virt-controller (infra only); unset: 2.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`
}

// NodePlacement is what a pod spec says about where it may run.
type NodePlacement struct {
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// EtcdSpec is Hangar's etcd: a StatefulSet with a volume per member.
type EtcdSpec struct {
	// Replicas is the number of members: 1, or 3 so that a quorum survives a node.
	// +optional
	// +kubebuilder:validation:Enum=1;3
	Replicas *int32 `json:"replicas,omitempty"`
	// StorageClassName of the members' volumes; unset: the cluster's default class (the
	// operator refuses to start without one).
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// QuotaBackendBytes is etcd's space quota; unset: 4 GiB.
	// +optional
	QuotaBackendBytes *resource.Quantity `json:"quotaBackendBytes,omitempty"`
	// Storage is each member's volume size; it must hold the quota. Unset: the quota plus
	// a quarter.
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty"`
}

// CertificateRotateStrategy sets the lifetimes of the certificates, as KubeVirt's.
type CertificateRotateStrategy struct {
	// +optional
	SelfSigned *SelfSignConfiguration `json:"selfSigned,omitempty"`
}

// SelfSignConfiguration holds the lifetimes of the CAs and of the certificates they sign.
type SelfSignConfiguration struct {
	// CA: unset, 7 days, renewed 2 days before it expires.
	// +optional
	CA *CertConfig `json:"ca,omitempty"`
	// Server holds the serving and client certificates: unset, 1 day, renewed 12 hours
	// before they expire.
	// +optional
	Server *CertConfig `json:"server,omitempty"`
}

// CertConfig is a certificate's lifetime and how long before its end it is renewed.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || !has(self.renewBefore) || duration(self.renewBefore) < duration(self.duration)",message="renewBefore must be shorter than duration"
type CertConfig struct {
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// WorkloadUpdateStrategy says how running guests move to launchers of a new version, as
// KubeVirt's.
type WorkloadUpdateStrategy struct {
	// WorkloadUpdateMethods: LiveMigrate moves each migratable instance to a new launcher by
	// live migration. Empty: instances keep their launchers until they stop. Instances that
	// cannot migrate are counted in status.outdatedVirtualMachineInstanceWorkloads.
	// +optional
	// +listType=set
	WorkloadUpdateMethods []WorkloadUpdateMethod `json:"workloadUpdateMethods,omitempty"`
	// BatchEvictionSize is how many instances are migrated per interval; unset: 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	BatchEvictionSize *int `json:"batchEvictionSize,omitempty"`
	// BatchEvictionInterval is the time between batches; unset: 1 minute.
	// +optional
	BatchEvictionInterval *metav1.Duration `json:"batchEvictionInterval,omitempty"`
}

// WorkloadUpdateMethod is a way to move a guest to a launcher of the new version.
// +kubebuilder:validation:Enum=LiveMigrate
type WorkloadUpdateMethod string

// WorkloadUpdateMethodLiveMigrate migrates the instance to a new launcher.
const WorkloadUpdateMethodLiveMigrate WorkloadUpdateMethod = "LiveMigrate"

// UninstallStrategy says what deleting the Hangar object does while VMs exist.
type UninstallStrategy string

const (
	// UninstallBlockIfWorkloadsExist waits while any VM, instance or replica set exists.
	UninstallBlockIfWorkloadsExist UninstallStrategy = "BlockUninstallIfWorkloadsExist"
	// UninstallRemoveWorkloads deletes them first.
	UninstallRemoveWorkloads UninstallStrategy = "RemoveWorkloads"
)

// HangarPhase is where an installation stands, as KubeVirt's.
type HangarPhase string

const (
	PhaseDeploying HangarPhase = "Deploying"
	PhaseDeployed  HangarPhase = "Deployed"
	PhaseDeleting  HangarPhase = "Deleting"
)

// Condition types of a Hangar object.
const (
	// ConditionAvailable: the API is served and every component is ready.
	ConditionAvailable = "Available"
	// ConditionProgressing: the operator is rolling components towards the spec or a version.
	ConditionProgressing = "Progressing"
	// ConditionDegraded: something keeps the installation from its spec; the reason says what.
	ConditionDegraded = "Degraded"
)

// HangarStatus is what the operator last made of the spec.
type HangarStatus struct {
	// +optional
	Phase HangarPhase `json:"phase,omitempty"`
	// Conditions: Available, Progressing and Degraded, each with a reason.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// TargetVersion is the version the operator installs (its own); ObservedVersion the one
	// every component runs.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// +optional
	ObservedVersion string `json:"observedVersion,omitempty"`
	// OutdatedVirtualMachineInstanceWorkloads counts running instances whose launcher is of
	// an older version.
	// +optional
	OutdatedVirtualMachineInstanceWorkloads *int `json:"outdatedVirtualMachineInstanceWorkloads,omitempty"`
}
