package v1beta1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// DefaultDurationTTL is how long an export lives when its spec gives no ttlDuration, as
// KubeVirt's.
const DefaultDurationTTL = 2 * time.Hour

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineExport asks for the volumes of a VirtualMachine, a VirtualMachineSnapshot or a
// PersistentVolumeClaim to be served for download, over HTTPS with a token, for a bounded time.
type VirtualMachineExport struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec names the source, the token and the lifetime.
	Spec VirtualMachineExportSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the export controller observed: the links to download from.
	// +optional
	Status VirtualMachineExportStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineExportList is a list of VirtualMachineExports.
type VirtualMachineExportList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineExports.
	Items []VirtualMachineExport `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineExportSpec says what to export, with which token, for how long.
type VirtualMachineExportSpec struct {
	// Source is a kubevirt.io VirtualMachine, a snapshot.kubevirt.io VirtualMachineSnapshot
	// or a core PersistentVolumeClaim, in the export's namespace.
	Source corev1.TypedLocalObjectReference `json:"source" protobuf:"bytes,1,opt,name=source"`
	// TokenSecretRef names the Secret whose `token` key a download must present; when absent
	// the controller makes one and names it in status.tokenSecretRef.
	// +optional
	TokenSecretRef *string `json:"tokenSecretRef,omitempty" protobuf:"bytes,2,opt,name=tokenSecretRef"`
	// TTLDuration is how long the export lives after its creation (2h when absent); then it
	// is deleted.
	// +optional
	TTLDuration *metav1.Duration `json:"ttlDuration,omitempty" protobuf:"bytes,3,opt,name=ttlDuration"`
}

// VirtualMachineExportPhase is where an export is in its life.
type VirtualMachineExportPhase string

// The phases of an export, as KubeVirt's.
const (
	// Pending: the server is not serving yet (a claim is not bound or is in use, the VM runs).
	Pending VirtualMachineExportPhase = "Pending"
	// Ready: the links serve.
	Ready VirtualMachineExportPhase = "Ready"
	// Terminated: the export ended (its time is up) and serves no more.
	Terminated VirtualMachineExportPhase = "Terminated"
	// Skipped: the source has no volume that can be exported; no server runs.
	Skipped VirtualMachineExportPhase = "Skipped"
)

// VirtualMachineExportStatus is what the export controller observed.
type VirtualMachineExportStatus struct {
	// Phase is Pending, Ready, Terminated or Skipped.
	// +optional
	Phase VirtualMachineExportPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=VirtualMachineExportPhase"`
	// Links are the URLs the volumes are served at.
	// +optional
	Links *VirtualMachineExportLinks `json:"links,omitempty" protobuf:"bytes,2,opt,name=links"`
	// TokenSecretRef names the Secret holding the download token.
	// +optional
	TokenSecretRef *string `json:"tokenSecretRef,omitempty" protobuf:"bytes,3,opt,name=tokenSecretRef"`
	// TTLExpirationTime is when the export is deleted.
	// +optional
	TTLExpirationTime *metav1.Time `json:"ttlExpirationTime,omitempty" protobuf:"bytes,4,opt,name=ttlExpirationTime"`
	// ServiceName is the Service in front of the export server.
	// +optional
	ServiceName string `json:"serviceName,omitempty" protobuf:"bytes,5,opt,name=serviceName"`
	// VirtualMachineName is the exported VM, for VM and snapshot sources.
	// +optional
	VirtualMachineName *string `json:"virtualMachineName,omitempty" protobuf:"bytes,6,opt,name=virtualMachineName"`
	// Conditions are Ready and PVCReady.
	// +optional
	// +listType=atomic
	Conditions []snapshotv1beta1.Condition `json:"conditions,omitempty" protobuf:"bytes,7,rep,name=conditions"`
}

// VirtualMachineExportLinks are the links inside the cluster and, where an ingress exposes
// the server, outside it.
type VirtualMachineExportLinks struct {
	// Internal links are the Service's, valid inside the cluster.
	// +optional
	Internal *VirtualMachineExportLink `json:"internal,omitempty" protobuf:"bytes,1,opt,name=internal"`
	// External links go through an ingress or route.
	// +optional
	External *VirtualMachineExportLink `json:"external,omitempty" protobuf:"bytes,2,opt,name=external"`
}

// VirtualMachineExportLink is one way to reach the export server.
type VirtualMachineExportLink struct {
	// Cert is the PEM certificate of the authority the server's certificate chains to.
	Cert string `json:"cert" protobuf:"bytes,1,opt,name=cert"`
	// Volumes are the exported volumes and their URLs.
	// +optional
	// +listType=atomic
	Volumes []VirtualMachineExportVolume `json:"volumes,omitempty" protobuf:"bytes,2,rep,name=volumes"`
	// Manifests are URLs of the exported VM's manifests.
	// +optional
	// +listType=atomic
	Manifests []VirtualMachineExportManifest `json:"manifests,omitempty" protobuf:"bytes,3,rep,name=manifests"`
}

// ExportManifestType is what a manifest URL returns.
type ExportManifestType string

// The manifest types, as KubeVirt's.
const (
	AllManifests ExportManifestType = "all"
	AuthHeader   ExportManifestType = "auth-header-secret"
)

// VirtualMachineExportManifest is a URL of a manifest.
type VirtualMachineExportManifest struct {
	// Type is all or auth-header-secret.
	Type ExportManifestType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ExportManifestType"`
	// Url is where the manifest is served.
	Url string `json:"url" protobuf:"bytes,2,opt,name=url"`
}

// VirtualMachineExportVolume is an exported volume and the formats it is served in.
type VirtualMachineExportVolume struct {
	// Name is the volume's name (the claim's, for a claim source).
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Formats are the URLs of the volume, one per format.
	// +optional
	// +listType=atomic
	Formats []VirtualMachineExportVolumeFormat `json:"formats,omitempty" protobuf:"bytes,2,rep,name=formats"`
}

// ExportVolumeFormat is how a volume is served.
type ExportVolumeFormat string

// The formats, as KubeVirt's: a disk image raw or gzipped; any other claim's files as a
// directory listing or a tarball.
const (
	KubeVirtRaw ExportVolumeFormat = "raw"
	KubeVirtGz  ExportVolumeFormat = "gzip"
	Dir         ExportVolumeFormat = "dir"
	ArchiveGz   ExportVolumeFormat = "tar.gz"
)

// VirtualMachineExportVolumeFormat is one format's URL.
type VirtualMachineExportVolumeFormat struct {
	// Format is raw, gzip, dir or tar.gz.
	Format ExportVolumeFormat `json:"format" protobuf:"bytes,1,opt,name=format,casttype=ExportVolumeFormat"`
	// Url is where the volume is served in this format.
	Url string `json:"url" protobuf:"bytes,2,opt,name=url"`
}

// The conditions of an export, as KubeVirt's. Conditions are the snapshot group's type, as
// clone.kubevirt.io's are: one OpenAPI model, v1beta1.Condition, for the groups.
const (
	ConditionReady          snapshotv1beta1.ConditionType = "Ready"
	ConditionPVC            snapshotv1beta1.ConditionType = "PVCReady"
	ConditionVolumesCreated snapshotv1beta1.ConditionType = "VolumesCreated"
)
