//go:build cluster

// Package smoke checks, on a running local cluster, what the cluster tooling provides beyond
// Kubernetes itself: the OCI registry on the host. hack/cluster/smoke.sh runs it after
// test/cluster's checks, as root (it cleans up the nodes' images with ctr).
package smoke

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hangarvm/hangar/hack/tools/internal/cluster"
)

// TestRegistryPull pushes two images to the registry as build scripts do (hack/cluster/
// push.sh): a busybox built with a layer no node has (it prints a nonce) under a tag no node
// has, and the busybox image up imported into the nodes, taken whole from its tarball (-from).
// On every node a pod runs the first by tag with imagePullPolicy Always and the second by
// digest: both pulled from the registry over HTTPS, trusting the cluster CA.
func TestRegistryPull(t *testing.T) {
	ctx := context.Background()
	s := settings(t)
	kube := client(t, s)
	nonce := randomHex(t)

	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string][]byte{"bin/busybox": busybox, "nonce": []byte(nonce)} {
		if err := os.WriteFile(filepath.Join(rootfs, file), content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	built := push(t, s, "smoke/busybox:"+nonce, "-dir", rootfs, "-cmd", `["/bin/busybox","cat","/nonce"]`)
	t.Logf("pushed %s (%.1fs)", built, time.Since(start).Seconds())
	archive := s.ImageTarball(s.BusyboxImage)
	whole := push(t, s, "smoke/busybox-archive:"+nonce, "-from", archive)
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	if digest, _ := img.Digest(); !strings.HasSuffix(whole, "@"+digest.String()) {
		t.Errorf("%s pushed as %s; the nodes imported it as %s", archive, whole, digest)
	}
	tag := s.RegistryAddress() + "/smoke/busybox:" + nonce
	transport, err := caTransport(s.RegistryCA())
	if err != nil {
		t.Fatal(err)
	}
	// containerd names a pulled image by tag, by digest and by its config's digest (its ID).
	// The archive's ID is the imported busybox's: that name stays.
	id := configDigest(t, built, transport)
	t.Cleanup(func() { cleanUp(t, s, transport, []string{built, whole}, tag, built, id, whole) })

	ns := "registry-smoke-" + nonce[:8]
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	waitFor(t, 30*time.Second, "the default ServiceAccount", func() error {
		_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) == 0 {
		t.Fatal("no nodes")
	}
	start = time.Now()
	for _, node := range nodes.Items {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pull-" + node.Name},
			Spec: corev1.PodSpec{
				NodeName:      node.Name,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{
					{Name: "by-tag", Image: tag, ImagePullPolicy: corev1.PullAlways},
					{Name: "by-digest", Image: whole, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}},
				},
			},
		}
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes.Items {
		podName := "pull-" + node.Name
		var pod *corev1.Pod
		waitFor(t, 120*time.Second, podName+" to succeed", func() error {
			pod, err = kube.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			switch pod.Status.Phase {
			case corev1.PodSucceeded:
				return nil
			case corev1.PodFailed:
				t.Fatalf("%s failed: %s", podName, describe(ctx, kube, ns, podName))
			}
			return fmt.Errorf("%s is %s: %s", podName, pod.Status.Phase, describe(ctx, kube, ns, podName))
		})
		for _, c := range pod.Status.ContainerStatuses {
			// The archive's image is also the imported hangar.local/busybox: containerd may
			// report it under that name, with the same digest.
			if c.Name == "by-tag" && c.ImageID != built || c.Name == "by-digest" && !sameDigest(c.ImageID, whole) {
				t.Errorf("%s on %s ran image %s", c.Name, node.Name, c.ImageID)
			}
		}
		logs, err := kube.CoreV1().Pods(ns).GetLogs(podName, &corev1.PodLogOptions{Container: "by-tag"}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(logs)) != nonce {
			t.Errorf("%s on %s printed %q; want the pushed layer's nonce %q", podName, node.Name, logs, nonce)
		}
		t.Logf("%s: %s", node.Name, pulled(ctx, kube, ns, podName))
	}
	t.Logf("%d nodes pulled and ran both images (%.1fs)", len(nodes.Items), time.Since(start).Seconds())
}

func sameDigest(a, b string) bool {
	_, da, _ := strings.Cut(a, "@")
	_, db, _ := strings.Cut(b, "@")
	return da != "" && da == db
}

func settings(t *testing.T) *cluster.Settings {
	t.Helper()
	root := os.Getenv("HANGAR_REPO_ROOT")
	if root == "" {
		root = "../../.." // this package's directory is hack/tools/smoke
	}
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cluster.FromEnv(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func client(t *testing.T, s *cluster.Settings) kubernetes.Interface {
	t.Helper()
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = s.AdminKubeconfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("no cluster (%v): run hack/cluster/up.sh", err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// push runs hack/cluster/push.sh and returns the pinned reference it printed.
func push(t *testing.T, s *cluster.Settings, image string, flags ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.RepoRoot, "hack", "cluster", "push.sh"), append([]string{image}, flags...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("push.sh %s: %v", image, err)
	}
	pinned := strings.TrimSpace(string(out))
	repo, _, _ := strings.Cut(image, ":")
	if !strings.HasPrefix(pinned, s.RegistryAddress()+"/"+repo+"@sha256:") {
		t.Fatalf("push.sh %s printed %q; want %s/%s@sha256:...", image, pinned, s.RegistryAddress(), repo)
	}
	return pinned
}

// describe is a pod's container states and events, for a failure's message.
func describe(ctx context.Context, kube kubernetes.Interface, ns, pod string) string {
	var b strings.Builder
	if p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err == nil {
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "%s: %+v; ", c.Name, c.State)
		}
	}
	events, _ := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if events != nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "%s: %s; ", e.Reason, e.Message)
		}
	}
	return b.String()
}

// pulled is what the kubelet said about the pulls.
func pulled(ctx context.Context, kube kubernetes.Interface, ns, pod string) string {
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",reason=Pulled"})
	if err != nil {
		return err.Error()
	}
	var msgs []string
	for _, e := range events.Items {
		msgs = append(msgs, e.Message)
	}
	return strings.Join(msgs, "; ")
}

// configDigest is the digest of an image's config in the registry.
func configDigest(t *testing.T, ref string, transport http.RoundTripper) string {
	t.Helper()
	r, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, remote.WithTransport(transport))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return digest.String()
}

// cleanUp forgets names of pulled images on every node (containerd collects their content
// once no image and no container uses it) and deletes the pushed manifests from the registry
// (their blobs stay until a purge).
func cleanUp(t *testing.T, s *cluster.Settings, transport http.RoundTripper, pushed []string, names ...string) {
	for i := 1; i <= 200; i++ {
		n := s.Node(i)
		if _, err := os.Stat(n.ContainerdSocket()); err != nil {
			continue
		}
		args := append([]string{"--address", n.ContainerdSocket(), "--namespace", "k8s.io", "images", "rm"}, names...)
		if out, err := exec.Command(s.Bin("ctr"), args...).CombinedOutput(); err != nil {
			t.Logf("%s: ctr images rm: %v: %s", n.Name, err, out)
		}
	}
	for _, ref := range pushed {
		r, err := name.NewDigest(ref)
		if err == nil {
			err = remote.Delete(r, remote.WithTransport(transport))
		}
		if err != nil {
			t.Logf("delete %s from the registry: %v", ref, err)
		}
	}
}

func caTransport(caFile string) (http.RoundTripper, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, nil
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := ok()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
