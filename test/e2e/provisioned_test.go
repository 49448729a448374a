//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// diskImage is hack/guest's Debian disk as a containerDisk image; hack/test.sh imports it
// (hack/guest/build-containerdisk.sh) before the e2e tests.
const diskImage = "hangar.local/containerdisk-guest:dev"

// populate writes the Debian disk into a claim, as a data importer would.
func populate(t *testing.T, ns, claim string, block bool) {
	t.Helper()
	populateFrom(t, ns, claim, block, diskImage, "debian.qcow2")
}

// populateFrom writes the disk file under /disk of a containerDisk image into a claim: the
// file is copied out with the launcher image's hangar-copy (the disk images have no shell),
// then converted to raw by qemu-img onto the claim (disk.img on a Filesystem claim, the device
// itself for a Block claim). The pod meets Pod Security restricted.
func populateFrom(t *testing.T, ns, claim string, block bool, image, file string) {
	t.Helper()
	ctx := context.Background()
	restricted := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	target, mounts, devices := "/pvc/disk.img", []corev1.VolumeMount{{Name: "pvc", MountPath: "/pvc"}}, []corev1.VolumeDevice(nil)
	source := "/work/disk/" + file
	convert := []string{"qemu-img", "convert", "-O", "raw", source, target}
	if block {
		target, mounts, devices = "/dev/xvdb", nil, []corev1.VolumeDevice{{Name: "pvc", DevicePath: "/dev/xvdb"}}
		// The device exists: qemu-img must not try to create it.
		convert = []string{"qemu-img", "convert", "-n", "-O", "raw", source, target}
	}
	_, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "populate-" + claim},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](107), RunAsGroup: ptr.To[int64](107), FSGroup: ptr.To[int64](107),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			InitContainers: []corev1.Container{
				{Name: "helper", Image: launcherImage(t), ImagePullPolicy: corev1.PullIfNotPresent, SecurityContext: restricted,
					Command:      []string{"/usr/bin/hangar-copy", "-install", "/helper"},
					VolumeMounts: []corev1.VolumeMount{{Name: "helper", MountPath: "/helper"}}},
				{Name: "copy", Image: image, ImagePullPolicy: corev1.PullNever, SecurityContext: restricted,
					Command:      []string{"/helper/hangar-copy", "/work", "/disk"},
					VolumeMounts: []corev1.VolumeMount{{Name: "helper", MountPath: "/helper"}, {Name: "work", MountPath: "/work"}}},
			},
			Containers: []corev1.Container{{
				Name: "convert", Image: launcherImage(t), ImagePullPolicy: corev1.PullIfNotPresent, SecurityContext: restricted,
				Command:       convert,
				VolumeMounts:  append(mounts, corev1.VolumeMount{Name: "work", MountPath: "/work"}),
				VolumeDevices: devices,
			}},
			Volumes: []corev1.Volume{
				{Name: "helper", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var phase corev1.PodPhase
	require.Eventually(t, func() bool {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "populate-"+claim, metav1.GetOptions{})
		if err != nil {
			return false
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	}, 180*time.Second, time.Second, "populating %s", claim)
	if phase != corev1.PodSucceeded {
		logs, _ := kube.CoreV1().Pods(ns).GetLogs("populate-"+claim, &corev1.PodLogOptions{Container: "convert"}).DoRaw(ctx)
		t.Fatalf("populating %s: pod %s: %s", claim, phase, logs)
	}
	// The claim is bound to the populator's node; the guest follows it there.
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, "populate-"+claim, metav1.DeleteOptions{}))
}

// TestVMBootsFromProvisionedClaim: a VM whose root disk is a claim that the cluster's
// provisioners made on demand, Filesystem (local-path, the default class) and Block
// (hangar-block), boots from it: the BIOS, the boot loader and Debian from the claim.
func TestVMBootsFromProvisionedClaim(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-provisioned")
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		name  string
		class *string
		mode  *corev1.PersistentVolumeMode
	}{
		{name: "filesystem"},
		{name: "block", class: ptr.To("hangar-block"), mode: &block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: tc.class, VolumeMode: tc.mode,
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			start := time.Now()
			populate(t, ns, tc.name, tc.mode != nil)
			t.Logf("claim provisioned and populated: %s", time.Since(start).Round(time.Second))

			_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: "from-" + tc.name},
				Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{
					Spec: v1.VirtualMachineInstanceSpec{
						Domain: v1.DomainSpec{
							Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
							Devices:   v1.Devices{Disks: []v1.Disk{{Name: "rootdisk"}}, AutoattachGraphicsDevice: ptr.To(false)},
						},
						Volumes: []v1.Volume{{Name: "rootdisk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
							PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: tc.name}}}}},
						TerminationGracePeriodSeconds: ptr.To[int64](5),
					},
				}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			vm := "from-" + tc.name
			waitVMI(t, ns, vm, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
			attach(t, ns, vm, "console").waitFor(t, banner, 240*time.Second)
			t.Logf("VM booted from its %s claim: %s", tc.name, time.Since(start).Round(time.Second))
		})
	}
}
