package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataVolumeSpec is what a DataVolume (cdi.kubevirt.io/v1beta1) imports, clones or uploads
// into its claim, and the claim it makes for it.
type DataVolumeSpec struct {
	// Source is where the DataVolume's data comes from.
	// +optional
	Source *DataVolumeSource `json:"source,omitempty" protobuf:"bytes,1,opt,name=source"`
	// SourceRef names an object (a DataSource) that says where the data comes from.
	// +optional
	SourceRef *DataVolumeSourceRef `json:"sourceRef,omitempty" protobuf:"bytes,2,opt,name=sourceRef"`
	// PVC is the claim to make, as written (no defaults from a storage profile).
	// +optional
	PVC *corev1.PersistentVolumeClaimSpec `json:"pvc,omitempty" protobuf:"bytes,3,opt,name=pvc"`
	// Storage is the claim to make, completed by CDI from the storage class's profile.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty" protobuf:"bytes,4,opt,name=storage"`
	// PriorityClassName is the priority class of CDI's worker pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty" protobuf:"bytes,5,opt,name=priorityClassName"`
	// ServiceAccountName is the service account of CDI's worker pods.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty" protobuf:"bytes,6,opt,name=serviceAccountName"`
	// ContentType is kubevirt (a disk image, the default) or archive.
	// +optional
	ContentType DataVolumeContentType `json:"contentType,omitempty" protobuf:"bytes,7,opt,name=contentType,casttype=DataVolumeContentType"`
	// Checkpoints are the stages of a multi-stage import.
	// +optional
	// +listType=atomic
	Checkpoints []DataVolumeCheckpoint `json:"checkpoints,omitempty" protobuf:"bytes,8,rep,name=checkpoints"`
	// FinalCheckpoint says the last checkpoint is the final stage of the import.
	// +optional
	FinalCheckpoint bool `json:"finalCheckpoint,omitempty" protobuf:"varint,9,opt,name=finalCheckpoint"`
	// Preallocation asks CDI to preallocate the disk's space.
	// +optional
	Preallocation *bool `json:"preallocation,omitempty" protobuf:"varint,10,opt,name=preallocation"`
}

// StorageSpec is a claim's spec whose unset fields CDI fills from the storage profile.
type StorageSpec struct {
	// AccessModes of the claim.
	// +optional
	// +listType=atomic
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty" protobuf:"bytes,1,rep,name=accessModes,casttype=k8s.io/api/core/v1.PersistentVolumeAccessMode"`
	// Selector over the volumes the claim may bind.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,2,opt,name=selector"`
	// Resources is the claim's size.
	// +optional
	Resources corev1.VolumeResourceRequirements `json:"resources,omitempty" protobuf:"bytes,3,opt,name=resources"`
	// VolumeName binds the claim to this volume.
	// +optional
	VolumeName string `json:"volumeName,omitempty" protobuf:"bytes,4,opt,name=volumeName"`
	// StorageClassName of the claim.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty" protobuf:"bytes,5,opt,name=storageClassName"`
	// VolumeMode is Filesystem, Block or FromStorageProfile.
	// +optional
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty" protobuf:"bytes,6,opt,name=volumeMode,casttype=k8s.io/api/core/v1.PersistentVolumeMode"`
	// DataSource of the claim.
	// +optional
	DataSource *corev1.TypedLocalObjectReference `json:"dataSource,omitempty" protobuf:"bytes,7,opt,name=dataSource"`
	// DataSourceRef of the claim.
	// +optional
	DataSourceRef *corev1.TypedObjectReference `json:"dataSourceRef,omitempty" protobuf:"bytes,8,opt,name=dataSourceRef"`
}

// DataVolumeContentType is what the imported data is.
type DataVolumeContentType string

const (
	// DataVolumeKubeVirt is a disk image.
	DataVolumeKubeVirt DataVolumeContentType = "kubevirt"
	// DataVolumeArchive is a tar archive unpacked into the volume.
	DataVolumeArchive DataVolumeContentType = "archive"
)

// DataVolumeCheckpoint is one stage of a multi-stage import.
type DataVolumeCheckpoint struct {
	// Previous is the checkpoint the stage starts from.
	Previous string `json:"previous" protobuf:"bytes,1,opt,name=previous"`
	// Current is the checkpoint the stage imports.
	Current string `json:"current" protobuf:"bytes,2,opt,name=current"`
}

// DataVolumeSource is where a DataVolume's data comes from; one member is set.
type DataVolumeSource struct {
	// +optional
	HTTP *DataVolumeSourceHTTP `json:"http,omitempty" protobuf:"bytes,1,opt,name=http"`
	// +optional
	S3 *DataVolumeSourceS3 `json:"s3,omitempty" protobuf:"bytes,2,opt,name=s3"`
	// +optional
	GCS *DataVolumeSourceGCS `json:"gcs,omitempty" protobuf:"bytes,3,opt,name=gcs"`
	// +optional
	Registry *DataVolumeSourceRegistry `json:"registry,omitempty" protobuf:"bytes,4,opt,name=registry"`
	// +optional
	PVC *DataVolumeSourcePVC `json:"pvc,omitempty" protobuf:"bytes,5,opt,name=pvc"`
	// +optional
	Upload *DataVolumeSourceUpload `json:"upload,omitempty" protobuf:"bytes,6,opt,name=upload"`
	// +optional
	Blank *DataVolumeBlankImage `json:"blank,omitempty" protobuf:"bytes,7,opt,name=blank"`
	// +optional
	Imageio *DataVolumeSourceImageIO `json:"imageio,omitempty" protobuf:"bytes,8,opt,name=imageio"`
	// +optional
	VDDK *DataVolumeSourceVDDK `json:"vddk,omitempty" protobuf:"bytes,9,opt,name=vddk"`
	// +optional
	Snapshot *DataVolumeSourceSnapshot `json:"snapshot,omitempty" protobuf:"bytes,10,opt,name=snapshot"`
}

// DataVolumeSourcePVC clones a claim.
type DataVolumeSourcePVC struct {
	// Namespace of the claim.
	Namespace string `json:"namespace" protobuf:"bytes,1,opt,name=namespace"`
	// Name of the claim.
	Name string `json:"name" protobuf:"bytes,2,opt,name=name"`
}

// DataVolumeSourceSnapshot clones a VolumeSnapshot.
type DataVolumeSourceSnapshot struct {
	// Namespace of the snapshot.
	Namespace string `json:"namespace" protobuf:"bytes,1,opt,name=namespace"`
	// Name of the snapshot.
	Name string `json:"name" protobuf:"bytes,2,opt,name=name"`
}

// DataVolumeBlankImage makes a blank disk image.
type DataVolumeBlankImage struct{}

// DataVolumeSourceUpload waits for an upload through CDI's upload proxy.
type DataVolumeSourceUpload struct{}

// DataVolumeSourceS3 imports from an S3 bucket.
type DataVolumeSourceS3 struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	SecretRef string `json:"secretRef,omitempty" protobuf:"bytes,2,opt,name=secretRef"`
	// +optional
	CertConfigMap string `json:"certConfigMap,omitempty" protobuf:"bytes,3,opt,name=certConfigMap"`
}

// DataVolumeSourceGCS imports from a Google Cloud Storage bucket.
type DataVolumeSourceGCS struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	SecretRef string `json:"secretRef,omitempty" protobuf:"bytes,2,opt,name=secretRef"`
}

// DataVolumeSourceRegistry imports a disk image from a container image.
type DataVolumeSourceRegistry struct {
	// +optional
	URL *string `json:"url,omitempty" protobuf:"bytes,1,opt,name=url"`
	// +optional
	ImageStream *string `json:"imageStream,omitempty" protobuf:"bytes,2,opt,name=imageStream"`
	// +optional
	PullMethod *RegistryPullMethod `json:"pullMethod,omitempty" protobuf:"bytes,3,opt,name=pullMethod,casttype=RegistryPullMethod"`
	// +optional
	SecretRef *string `json:"secretRef,omitempty" protobuf:"bytes,4,opt,name=secretRef"`
	// +optional
	CertConfigMap *string `json:"certConfigMap,omitempty" protobuf:"bytes,5,opt,name=certConfigMap"`
	// +optional
	Platform *PlatformOptions `json:"platform,omitempty" protobuf:"bytes,6,opt,name=platform"`
}

// PlatformOptions chooses the image of a multi-architecture container image.
type PlatformOptions struct {
	// +optional
	Architecture string `json:"architecture,omitempty" protobuf:"bytes,1,opt,name=architecture"`
}

// RegistryPullMethod is pod (CDI's importer pulls) or node (the kubelet pulls).
type RegistryPullMethod string

// DataVolumeSourceHTTP imports from an HTTP(S) URL.
type DataVolumeSourceHTTP struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	SecretRef string `json:"secretRef,omitempty" protobuf:"bytes,2,opt,name=secretRef"`
	// +optional
	CertConfigMap string `json:"certConfigMap,omitempty" protobuf:"bytes,3,opt,name=certConfigMap"`
	// +optional
	// +listType=atomic
	ExtraHeaders []string `json:"extraHeaders,omitempty" protobuf:"bytes,4,rep,name=extraHeaders"`
	// +optional
	// +listType=atomic
	SecretExtraHeaders []string `json:"secretExtraHeaders,omitempty" protobuf:"bytes,5,rep,name=secretExtraHeaders"`
	// +optional
	Checksum string `json:"checksum,omitempty" protobuf:"bytes,6,opt,name=checksum"`
}

// DataVolumeSourceImageIO imports from oVirt's imageio.
type DataVolumeSourceImageIO struct {
	URL    string `json:"url" protobuf:"bytes,1,opt,name=url"`
	DiskID string `json:"diskId" protobuf:"bytes,2,opt,name=diskId"`
	// +optional
	SecretRef string `json:"secretRef,omitempty" protobuf:"bytes,3,opt,name=secretRef"`
	// +optional
	CertConfigMap string `json:"certConfigMap,omitempty" protobuf:"bytes,4,opt,name=certConfigMap"`
	// +optional
	InsecureSkipVerify *bool `json:"insecureSkipVerify,omitempty" protobuf:"varint,5,opt,name=insecureSkipVerify"`
}

// DataVolumeSourceVDDK imports from VMware through VDDK.
type DataVolumeSourceVDDK struct {
	// +optional
	URL string `json:"url,omitempty" protobuf:"bytes,1,opt,name=url"`
	// +optional
	UUID string `json:"uuid,omitempty" protobuf:"bytes,2,opt,name=uuid"`
	// +optional
	BackingFile string `json:"backingFile,omitempty" protobuf:"bytes,3,opt,name=backingFile"`
	// +optional
	Thumbprint string `json:"thumbprint,omitempty" protobuf:"bytes,4,opt,name=thumbprint"`
	// +optional
	SecretRef string `json:"secretRef,omitempty" protobuf:"bytes,5,opt,name=secretRef"`
	// +optional
	InitImageURL string `json:"initImageURL,omitempty" protobuf:"bytes,6,opt,name=initImageURL"`
	// +optional
	ExtraArgs string `json:"extraArgs,omitempty" protobuf:"bytes,7,opt,name=extraArgs"`
}

// DataVolumeSourceRef names an object that says where the data comes from.
type DataVolumeSourceRef struct {
	// Kind is DataSource.
	Kind string `json:"kind" protobuf:"bytes,1,opt,name=kind"`
	// Namespace of the object; the DataVolume's when unset.
	// +optional
	Namespace *string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// Name of the object.
	Name string `json:"name" protobuf:"bytes,3,opt,name=name"`
}

// DataSourceKind is the kind a sourceRef names.
const DataSourceKind = "DataSource"
