//go:build kube

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestKubeVirtClientGo runs test/kubevirtclient (a module of its own) against virt-api behind
// kube-apiserver: KubeVirt's own Go client, kubevirt.io/client-go v1.6.0, the library KubeVirt's
// virtctl is built on, makes the calls of `virtctl addvolume`, `removevolume`,
// `memory-dump get|remove` and `vmexport create|delete` as a user of the edit role, and decodes
// the answers with KubeVirt's types. The test plays the controller (the instance, Running).
func TestKubeVirtClientGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds KubeVirt's client: a minute or more with cold caches")
	}
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	module, err := filepath.Abs(filepath.Join("..", "kubevirtclient"))
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubevirtclient")
	started := time.Now()
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Dir = module
	// The module's go.sum must be complete: nothing is added to it.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	t.Logf("KubeVirt's client built in %s", time.Since(started).Round(time.Millisecond))

	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "kubevirt-client"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "operator", "edit")
	for name, size := range map[string]string{"hot": "64Mi", "dump": "1Gi"} {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("guest", v1.RunStrategyManual), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase = v1.Running
	_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	cfg, err := c.KubeAPIServer.UserConfig("operator")
	require.NoError(t, err)
	kubeconfig := filepath.Join(dir, "operator.kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(cfg, kubeconfig))
	run := exec.Command(bin)
	run.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HANGAR_NAMESPACE="+ns, "HANGAR_VM=guest")
	out, err = run.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err)
}
