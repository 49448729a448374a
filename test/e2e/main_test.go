//go:build e2e

// Package e2e tests Hangar deployed on the local cluster (hack/cluster/up.sh, hack/install-local.sh):
// kube-apiserver, the APIServices, virt-api pods and their etcd, as a user meets them.
// Run with `go test -tags e2e ./test/e2e/` (KUBECONFIG defaults to _cluster/kubeconfig).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	operatorclient "github.com/hangarvm/hangar/pkg/generated/operator/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

var (
	kubeconfig string
	config     *rest.Config
	kube       kubernetes.Interface
	hangar     versioned.Interface
	// installation reaches the Hangar object (hangarvm.io), whose operator owns hangar-config.
	installation operatorclient.Interface
)

func TestMain(m *testing.M) {
	kubeconfig = os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(framework.RepoRoot(), "_cluster", "kubeconfig")
	}
	var err error
	if config, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "no cluster (%v): run hack/cluster/up.sh and hack/install-local.sh\n", err)
		os.Exit(1)
	}
	config.QPS, config.Burst = 50, 100
	kube = kubernetes.NewForConfigOrDie(config)
	hangar = versioned.NewForConfigOrDie(config)
	installation = operatorclient.NewForConfigOrDie(config)
	os.Exit(m.Run())
}

// kubectl runs kubectl against the cluster as the admin, or as another user with --as.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := kubectlCmd(t, args...).CombinedOutput()
	return string(out), err
}

// kubectlCmd is kubectl on the cluster's kubeconfig, with a cache of the test's own.
func kubectlCmd(t *testing.T, args ...string) *exec.Cmd {
	return exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
}

// kubectlStdout runs kubectl and returns its standard output and error apart: for an exec
// whose output a test parses, as kubectl logs on stderr now and then (client-go's exec stream:
// "Unknown stream id").
func kubectlStdout(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := kubectlCmd(t, args...)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	return string(out), errBuf.String(), err
}

// launcherImage is the virt-launcher image of the installed release (hangar-config), which
// has qemu-img and hangar-copy for tests' helper pods too.
func launcherImage(t *testing.T) string {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps("hangar").Get(context.Background(), "hangar-config", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, cm.Data["launcherImage"])
	return cm.Data["launcherImage"]
}

// figure prints a figure docs/performance.md keeps (hack/bench/install.sh collects the
// installer's; hack/test.sh's log has the others).
func figure(t *testing.T, name string, value any, unit string) {
	t.Logf("FIGURE %s %v %s", name, value, unit)
}
