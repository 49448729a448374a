//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// etcdUser has only the edit role in the test's namespace, like the user of the report
// this test keeps closed.
const etcdUser = "e2e-etcd-editor"

// plantedKey is what the attacks try to write: /hangar/planted, base64 for etcd's JSON API.
const plantedKey = "L2hhbmdhci9wbGFudGVk"

// TestEtcdIsClosedToPods runs, in a pod of a user namespace created by a user with the edit
// role, what such a pod could try against Hangar's etcd: etcd's JSON API over plain HTTP at
// the Service's address (as reported), TLS without a client certificate and with a
// certificate of its own CA on the client and peer ports, and the metrics port. Every read,
// write and delete must fail, while virt-api, which holds the client certificate, serves the
// same user. Then the instance's value in etcd, read with virt-api's certificate, must be
// ciphertext: no cloud-init user data in plaintext.
func TestEtcdIsClosedToPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-etcd")
	_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: etcdUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: etcdUser}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	userConfig := rest.CopyConfig(config)
	userConfig.Impersonate = rest.ImpersonationConfig{UserName: etcdUser}
	userKube := kubernetes.NewForConfigOrDie(userConfig)
	userHangar := versioned.NewForConfigOrDie(userConfig)

	service, err := kube.CoreV1().Services("hangar").Get(ctx, "hangar-etcd", metav1.GetOptions{})
	require.NoError(t, err)
	clusterIP := service.Spec.ClusterIP
	member, err := kube.CoreV1().Pods("hangar").Get(ctx, "hangar-etcd-0", metav1.GetOptions{})
	require.NoError(t, err)
	memberIP := member.Status.PodIP
	require.NotEmpty(t, memberIP)

	// The user's objects, through virt-api: a VM, and an instance whose user data is secret.
	// The instance waits for a node that does not exist, so no guest boots.
	const secret = "hangar-e2e-password-51d0"
	_, err = userHangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm("kept"), metav1.CreateOptions{})
	require.NoError(t, err, "virt-api serves the user")
	_, err = userHangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	spec := guestSpec()
	spec.NodeSelector = map[string]string{"hangar.test/no-such-node": "true"}
	spec.Volumes = append(spec.Volumes, v1.Volume{Name: "cloudinit", VolumeSource: v1.VolumeSource{
		CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config\npassword: " + secret + "\n"}}})
	_, err = userHangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "with-userdata"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)

	pod := attackerPod(t, userKube, ns)
	probe := buildEtcdProbe(t)
	out, err := kubectlIn(t, probe, "-n", ns, "--as", etcdUser, "exec", "-i", pod, "--",
		"sh", "-c", "cat >/work/etcdprobe && chmod +x /work/etcdprobe")
	require.NoError(t, err, out)
	sh := func(script string) string {
		t.Helper()
		// The script's output only: kubectl's own log lines on stderr (client-go's exec
		// stream says "Unknown stream id" now and then) are not the pod's answer.
		out, stderr, err := kubectlStdout(t, "-n", ns, "--as", etcdUser, "exec", pod, "--", "sh", "-c", script)
		require.NoError(t, err, stderr)
		return out
	}

	t.Run("plain HTTP to the client port", func(t *testing.T) {
		// The report's request, and a write and a delete, at the Service's address.
		for path, body := range map[string]string{
			"range":       `{"key":"L2hhbmdhci8=","range_end":"L2hhbmdhcjA=","keys_only":true}`,
			"put":         `{"key":"` + plantedKey + `","value":"e30="}`,
			"deleterange": `{"key":"L2hhbmdhci8=","range_end":"L2hhbmdhcjA="}`,
		} {
			got := sh("timeout 10 wget -q -O - --header 'Content-Type: application/json' --post-data '" + body +
				"' http://" + net.JoinHostPort(clusterIP, "2379") + "/v3/kv/" + path + " 2>&1; echo exit=$?")
			assert.NotContains(t, got, "exit=0", "%s over plain HTTP must fail: %s", path, got)
			assert.NotContains(t, got, `"header"`, "%s: etcd answered: %s", path, got)
		}
	})

	t.Run("TLS without etcd's certificates", func(t *testing.T) {
		got := sh("/work/etcdprobe " + strings.Join([]string{net.JoinHostPort(clusterIP, "2379"),
			net.JoinHostPort(memberIP, "2379"), net.JoinHostPort(memberIP, "2380")}, " "))
		lines := strings.Split(strings.TrimSpace(got), "\n")
		require.Len(t, lines, 6, got)
		refusal := regexp.MustCompile(`^(\S+) (no-certificate|foreign-ca) server=(hangar-etcd|hangar-etcd-peer) refused=.*(certificate required|unknown certificate authority|bad certificate)`)
		for _, line := range lines {
			// server= shows the attempt reached etcd: the refusal is etcd's, not the network's.
			assert.Regexp(t, refusal, line)
		}
	})

	t.Run("the metrics port serves health, not keys", func(t *testing.T) {
		metrics := "http://" + net.JoinHostPort(memberIP, "2381")
		assert.Equal(t, "ok", strings.TrimSpace(sh("timeout 10 wget -q -O - "+metrics+"/readyz")), "the probes' endpoint answers")
		got := sh("timeout 10 wget -q -O - --post-data '{\"key\":\"L2hhbmdhci8=\"}' " + metrics + "/v3/kv/range 2>&1; echo exit=$?")
		assert.Contains(t, got, "404 Not Found", got)
	})

	// The admin's view of etcd, with virt-api's client certificate, from this host through
	// kube-proxy: the attacks changed nothing, and what is stored is ciphertext.
	etcd := etcdAsVirtAPI(t, clusterIP)
	raw := func(key string) []byte {
		t.Helper()
		resp, err := etcd.Get(ctx, key)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1, "%s is in etcd", key)
		return resp.Kvs[0].Value
	}
	t.Run("nothing planted or deleted", func(t *testing.T) {
		resp, err := etcd.Get(ctx, "/hangar/planted")
		require.NoError(t, err)
		assert.Empty(t, resp.Kvs)
		_, err = userHangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "kept", metav1.GetOptions{})
		assert.NoError(t, err)
	})

	t.Run("no user data in plaintext", func(t *testing.T) {
		for _, key := range []string{"/hangar/kubevirt.io/virtualmachineinstances/" + ns + "/with-userdata",
			"/hangar/kubevirt.io/virtualmachines/" + ns + "/kept"} {
			value := raw(key)
			assert.True(t, strings.HasPrefix(string(value), "k8s:enc:secretbox:v1:"), "%s is encrypted: %q", key, value[:min(len(value), 32)])
			assert.NotContains(t, string(value), secret)
			assert.NotContains(t, string(value), "kubevirt.io/v1")
		}
		got, err := userHangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "with-userdata", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, got.Spec.Volumes[len(got.Spec.Volumes)-1].CloudInitNoCloud.UserData, secret, "virt-api decrypts")
	})
}

// attackerPod starts an unprivileged busybox pod as the user and returns its name.
func attackerPod(t *testing.T, userKube kubernetes.Interface, ns string) string {
	t.Helper()
	ctx := context.Background()
	_, err := userKube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "attacker"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "busybox", Image: "hangar.local/busybox:v2", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
			}},
			Volumes:                       []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := userKube.CoreV1().Pods(ns).Get(ctx, "attacker", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	}, 60*time.Second, 250*time.Millisecond, "the busybox pod runs")
	return "attacker"
}

// buildEtcdProbe builds test/e2e/etcdprobe as a static binary for the busybox pod.
func buildEtcdProbe(t *testing.T) *os.File {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "etcdprobe")
	cmd := exec.Command("go", "build", "-o", bin, "./test/e2e/etcdprobe")
	cmd.Dir = framework.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	f, err := os.Open(bin)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// kubectlIn is kubectl with stdin.
func kubectlIn(t *testing.T, stdin *os.File, args ...string) (string, error) {
	t.Helper()
	cmd := kubectlCmd(t, args...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// etcdAsVirtAPI is an etcd client with virt-api's certificate (Secret
// hangar/virt-api-etcd-client), at the Service's address, which etcd's certificate names.
func etcdAsVirtAPI(t *testing.T, clusterIP string) *clientv3.Client {
	t.Helper()
	s, err := kube.CoreV1().Secrets("hangar").Get(context.Background(), "virt-api-etcd-client", metav1.GetOptions{})
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(s.Data["ca.crt"]))
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + net.JoinHostPort(clusterIP, "2379")},
		TLS:         &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
		DialTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}
