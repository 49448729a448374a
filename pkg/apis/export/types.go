package export

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineExport asks for the volumes of a VirtualMachine, a VirtualMachineSnapshot or a
// PersistentVolumeClaim to be served for download, over HTTPS with a token, for a bounded time.
type VirtualMachineExport struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec names the source, the token and the lifetime.
	Spec VirtualMachineExportSpec
	// Status is what the export controller observed: the links to download from.
	Status VirtualMachineExportStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineExportList is a list of VirtualMachineExports.
type VirtualMachineExportList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineExports.
	Items []VirtualMachineExport
}

// VirtualMachineExportSpec says what to export, with which token, for how long.
type VirtualMachineExportSpec struct {
	// Source is a kubevirt.io VirtualMachine, a snapshot.kubevirt.io VirtualMachineSnapshot
	// or a core PersistentVolumeClaim, in the export's namespace.
	Source corev1.TypedLocalObjectReference
	// TokenSecretRef names the Secret whose `token` key a download must present; when absent
	// the controller makes one and names it in status.tokenSecretRef.
	TokenSecretRef *string
	// TTLDuration is how long the export lives after its creation (2h when absent); then it
	// is deleted.
	TTLDuration *metav1.Duration
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
	Phase VirtualMachineExportPhase
	// Links are the URLs the volumes are served at.
	Links *VirtualMachineExportLinks
	// TokenSecretRef names the Secret holding the download token.
	TokenSecretRef *string
	// TTLExpirationTime is when the export is deleted.
	TTLExpirationTime *metav1.Time
	// ServiceName is the Service in front of the export server.
	ServiceName string
	// VirtualMachineName is the exported VM, for VM and snapshot sources.
	VirtualMachineName *string
	// Conditions are Ready and PVCReady.
	Conditions []snapshot.Condition
}

// VirtualMachineExportLinks are the links inside the cluster and, where an ingress exposes
// the server, outside it.
type VirtualMachineExportLinks struct {
	// Internal links are the Service's, valid inside the cluster.
	Internal *VirtualMachineExportLink
	// External links go through an ingress or route.
	External *VirtualMachineExportLink
}

// VirtualMachineExportLink is one way to reach the export server.
type VirtualMachineExportLink struct {
	// Cert is the PEM certificate of the authority the server's certificate chains to.
	Cert string
	// Volumes are the exported volumes and their URLs.
	Volumes []VirtualMachineExportVolume
	// Manifests are URLs of the exported VM's manifests.
	Manifests []VirtualMachineExportManifest
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
	Type ExportManifestType
	// Url is where the manifest is served.
	Url string
}

// VirtualMachineExportVolume is an exported volume and the formats it is served in.
type VirtualMachineExportVolume struct {
	// Name is the volume's name (the claim's, for a claim source).
	Name string
	// Formats are the URLs of the volume, one per format.
	Formats []VirtualMachineExportVolumeFormat
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
	Format ExportVolumeFormat
	// Url is where the volume is served in this format.
	Url string
}
