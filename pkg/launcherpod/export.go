package launcherpod

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/exportserver"
)

// The export server (cmd/virt-exportserver) in the launcher image, and where its pod finds
// what it serves.
const (
	ExportServerImagePath = "/usr/bin/virt-exportserver"
	// ExporterAppLabelValue is the app label of export server pods, KubeVirt's.
	ExporterAppLabelValue = "virt-exporter"
	// ExportNameLabel names the export a server pod or Service belongs to.
	ExportNameLabel = "export.kubevirt.io/export"
	// ExportPort is the server's port in its pod; its Service serves it on 443.
	ExportPort = 8443

	exportContainer = "exporter"
	exportTLSDir    = "/etc/export/tls"
	exportTokenDir  = "/etc/export/token"
	exportDataDir   = "/export"
)

// ExportVolume is one claim an export server serves, as the volume named Name.
type ExportVolume struct {
	Name, Claim string
	// Kind is how it is served: a disk.img file, the device (a disk too) or any files.
	Kind exportserver.Kind
}

// The kinds of ExportVolume, the server's.
const (
	ExportKubeVirt = exportserver.KindKubeVirt
	ExportBlock    = exportserver.KindBlock
	ExportArchive  = exportserver.KindArchive
)

// ExportServerPod is the pod that serves an export's volumes over HTTPS: image's
// virt-exportserver as the launcher's user, under Pod Security restricted, with the claims
// mounted read-only, the server's key pair from tlsSecret and the download token from the
// tokenSecret's `token` key. It serves until expires.
func ExportServerPod(namespace, name string, owner metav1.OwnerReference, volumes []ExportVolume, tlsSecret, tokenSecret, image string, expires time.Time) *corev1.Pod {
	args := []string{ExportServerImagePath,
		fmt.Sprintf("-listen=:%d", ExportPort),
		"-cert=" + exportTLSDir + "/" + corev1.TLSCertKey, "-key=" + exportTLSDir + "/" + corev1.TLSPrivateKeyKey,
		"-token-file=" + exportTokenDir + "/token", "-expires=" + expires.UTC().Format(time.RFC3339)}
	container := corev1.Container{
		Name:            exportContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: containerSecurityContext(),
		Ports:           []corev1.ContainerPort{{Name: "https", ContainerPort: ExportPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/healthz", Port: intstr.FromInt32(ExportPort), Scheme: corev1.URISchemeHTTPS}},
			PeriodSeconds: 2},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: exportTLSDir, ReadOnly: true},
			{Name: "token", MountPath: exportTokenDir, ReadOnly: true},
		},
	}
	podVolumes := []corev1.Volume{
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tlsSecret}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tokenSecret,
			Items: []corev1.KeyToPath{{Key: "token", Path: "token"}}}}},
	}
	for i, v := range volumes {
		// Pod volume names are ours (the export's volume names may clash with "tls").
		podVolume := fmt.Sprintf("volume-%d", i)
		dir := exportDataDir + "/" + v.Name
		path := dir
		if v.Kind == ExportBlock {
			path = dir + "/" + exportserver.DiskImage
			container.VolumeDevices = append(container.VolumeDevices, corev1.VolumeDevice{Name: podVolume, DevicePath: path})
		} else {
			container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: podVolume, MountPath: dir, ReadOnly: true})
		}
		args = append(args, "-volume="+exportserver.Volume{Name: v.Name, Kind: v.Kind, Path: path}.String())
		podVolumes = append(podVolumes, corev1.Volume{Name: podVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim, ReadOnly: true}}})
	}
	container.Command = args
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ExportServerName(name),
			Namespace:       namespace,
			Labels:          ExportServerLabels(name),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			SecurityContext:               podSecurityContext(),
			Containers:                    []corev1.Container{container},
			Volumes:                       podVolumes,
		},
	}
}

// ExportServerName names the pod and the Service of the export name, KubeVirt's.
func ExportServerName(name string) string { return "virt-export-" + name }

// ExportServerLabels are the labels of the export name's pod, which its Service selects.
func ExportServerLabels(name string) map[string]string {
	return map[string]string{v1.AppLabel: ExporterAppLabelValue, ExportNameLabel: name}
}

// ExportService is the Service in front of the export name's server, on port 443.
func ExportService(namespace, name string, owner metav1.OwnerReference, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ExportServerName(name), Namespace: namespace, Labels: ExportServerLabels(name),
			Annotations: annotations, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.ServiceSpec{
			Selector: ExportServerLabels(name),
			Ports: []corev1.ServicePort{{Name: "export", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(ExportPort)}},
		},
	}
}
