//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
)

// writeClaim makes a claim marked as CDI marks one holding a disk image, fills its disk.img
// with size random bytes from a restricted pod (its first consumer, which binds it) and
// returns the bytes, read back from the node's disk.
func writeClaim(t *testing.T, ns, claim string, size int) []byte {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Annotations: map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	name := "write-" + claim
	_, err = kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](107), RunAsGroup: ptr.To[int64](107), FSGroup: ptr.To[int64](107),
				RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "write", Image: launcherImage(t), ImagePullPolicy: corev1.PullIfNotPresent,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Command:         []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/urandom > /pvc/disk.img", size)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "pvc", MountPath: "/pvc"}}}},
			Volumes: []corev1.Volume{{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod *corev1.Pod
	require.Eventually(t, func() bool {
		pod, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
	}, 120*time.Second, time.Second, "writing %s", claim)
	require.Equal(t, corev1.PodSucceeded, pod.Status.Phase)
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	data, err := os.ReadFile(claimFile(t, ns, claim, pod.Spec.NodeName, "disk.img"))
	require.NoError(t, err)
	require.Len(t, data, size)
	return data
}

// TestExportClaim exports a claim as KubeVirt's virtctl does (docs/snapshots.md#exports):
// vmexport download with --pvc creates the export, waits for its server, downloads the disk
// through a port-forward, raw, the bytes equal to the claim's, and deletes the export; a
// kept export serves the gzip link only to the token (KubeVirt's header), through a server
// whose certificate is the export's; once its TTL is up the export and its server go.
func TestExportClaim(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-export")
	data := writeClaim(t, ns, "disk", 3<<20+17)
	exports, err := exportclient.NewForConfig(config)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "disk.img")
	text, err := virtctl(t, "vmexport", "download", "once", "--pvc=disk", "--format=raw", "--output="+out, "--port-forward", "-n", ns)
	require.NoError(t, err, text)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "the download is the claim's disk: %d bytes, %d expected", len(got), len(data))
	require.Eventually(t, func() bool {
		_, err := exports.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "once", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, time.Second, "the export the download made is deleted")

	text, err = virtctl(t, "vmexport", "create", "kept", "--pvc=disk", "--ttl=90s", "-n", ns)
	require.NoError(t, err, text)
	var e *exportv1beta1.VirtualMachineExport
	require.Eventually(t, func() bool {
		e, err = exports.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "kept", metav1.GetOptions{})
		require.NoError(t, err)
		return e.Status.Phase == exportv1beta1.Ready
	}, 120*time.Second, time.Second, "the export gets ready")
	require.NotNil(t, e.Status.TokenSecretRef)
	secret, err := kube.CoreV1().Secrets(ns).Get(ctx, *e.Status.TokenSecretRef, metav1.GetOptions{})
	require.NoError(t, err)
	token := string(secret.Data["token"])
	require.NotEmpty(t, token)

	local := portForward(t, ns, "pod/virt-export-kept", "8443")
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM([]byte(e.Status.Links.Internal.Cert)))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		ServerName: "virt-export-kept." + ns + ".svc"}}}
	get := func(path, token string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+local+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("x-kubevirt-export-token", token)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, body
	}
	resp, _ := get("/volumes/disk/disk.img.gz", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token")
	resp, _ = get("/volumes/disk/disk.img.gz", "not-"+token)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a wrong token")
	resp, body := get("/volumes/disk/disk.img.gz", token)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, unzipped), "the gzip link serves the claim's disk")

	require.Eventually(t, func() bool {
		_, err := exports.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "kept", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false
		}
		_, err = kube.CoreV1().Pods(ns).Get(ctx, "virt-export-kept", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 150*time.Second, 2*time.Second, "after its TTL the export and its server are gone")
	_, err = kube.CoreV1().Secrets(ns).Get(ctx, *e.Status.TokenSecretRef, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "its token goes with it: %v", err)
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)

// portForward runs kubectl port-forward to target's port until the test ends and returns the
// local address.
func portForward(t *testing.T, ns, target, port string) string {
	t.Helper()
	cmd := kubectlCmd(t, "-n", ns, "port-forward", target, "0:"+port)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return "127.0.0.1:" + m[1]
		}
	}
	t.Fatalf("kubectl port-forward %s: no local port", target)
	return ""
}

// TestExportVM exports a stopped VM's claim disk: download with --vm gets the disk's bytes,
// the VM's kernel-boot and cloud-init volumes are not exported; while the VM runs its export
// stops serving (Pending, inUse, no server pod) and serves again once it stops.
func TestExportVM(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-export-vm")
	data := writeClaim(t, ns, "data", 1<<20+3)
	exports, err := exportclient.NewForConfig(config)
	require.NoError(t, err)
	spec := guestSpec()
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, v1.Disk{Name: "data", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}})
	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyHalted), Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}}},
		metav1.CreateOptions{})
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "data.img")
	text, err := virtctl(t, "vmexport", "download", "vm-export", "--vm=vm", "--volume=data", "--format=raw", "--output="+out, "--port-forward", "--keep-vme", "-n", ns)
	require.NoError(t, err, text)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "the download is the VM's data disk")
	e, err := exports.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "vm-export", metav1.GetOptions{})
	require.NoError(t, err, "--keep-vme keeps the export")
	require.NotNil(t, e.Status.Links)
	require.Len(t, e.Status.Links.Internal.Volumes, 1, "only the claim is exported")
	assert.Equal(t, "vm", ptr.Deref(e.Status.VirtualMachineName, ""))

	phase := func(want exportv1beta1.VirtualMachineExportPhase, what string) {
		t.Helper()
		require.Eventually(t, func() bool {
			e, err = exports.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "vm-export", metav1.GetOptions{})
			require.NoError(t, err)
			return e.Status.Phase == want
		}, 120*time.Second, time.Second, what)
	}
	text, err = virtctl(t, "start", "vm", "-n", ns)
	require.NoError(t, err, text)
	phase(exportv1beta1.Pending, "the export stops serving while the VM runs")
	assert.Contains(t, fmt.Sprint(e.Status.Conditions), "inUse")
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "virt-export-vm-export", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, time.Second, "its server pod goes")
	text, err = virtctl(t, "stop", "vm", "-n", ns)
	require.NoError(t, err, text)
	phase(exportv1beta1.Ready, "the export serves again once the VM stops")
	text, err = virtctl(t, "vmexport", "delete", "vm-export", "-n", ns)
	require.NoError(t, err, text)
}
