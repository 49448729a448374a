//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// clients are the admin's clients through kube-apiserver.
type clients struct {
	dynamic dynamic.Interface
	typed   versioned.Interface
	// sent is the Content-Type of the typed clientset's last create.
	sent atomic.Value
}

func newClients(t testing.TB, c *framework.Cluster) *clients {
	cl := &clients{}
	var err error
	cl.dynamic, err = dynamic.NewForConfig(c.Admin)
	require.NoError(t, err)
	typedCfg := rest.CopyConfig(c.Admin)
	typedCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPost {
				cl.sent.Store(req.Header.Get("Content-Type"))
			}
			return rt.RoundTrip(req)
		})
	})
	cl.typed, err = versioned.NewForConfig(typedCfg)
	require.NoError(t, err)
	return cl
}

func (c *clients) typedContentType() string {
	s, _ := c.sent.Load().(string)
	return s
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// typedVMs creates and lists VMs with the generated clientset, as Hangar's own components
// and Go programs do.
func typedVMs(c *clients, ns string) target {
	vms := c.typed.KubevirtV1().VirtualMachines(ns)
	return target{
		create: func(ctx context.Context, n int) error {
			_, err := vms.Create(ctx, typedVM(n), metav1.CreateOptions{})
			return err
		},
		get: func(ctx context.Context, n int) error {
			_, err := vms.Get(ctx, typedVM(n).Name, metav1.GetOptions{})
			return err
		},
		list: func(ctx context.Context, opts metav1.ListOptions) (int, string, error) {
			list, err := vms.List(ctx, opts)
			if err != nil {
				return 0, "", err
			}
			return len(list.Items), list.Continue, nil
		},
	}
}

// typedVM is vmObject("Halted") as a Go object.
func typedVM(n int) *v1.VirtualMachine {
	labels := map[string]string{"app": "bench"}
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vm-%05d", n), Labels: labels},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(v1.RunStrategyHalted),
			Template: &v1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.VirtualMachineInstanceSpec{
					Domain: v1.DomainSpec{
						Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
						Devices:   v1.Devices{Disks: []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}},
					},
					Volumes: []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "example/disk"}}}},
				},
			},
		},
	}
}

type objectFunc func(schema.GroupVersionResource, int) *unstructured.Unstructured

// vmObject makes a small VirtualMachine with the given run strategy, the same for both APIs
// but for the group.
func vmObject(runStrategy string) objectFunc {
	return func(gvr schema.GroupVersionResource, n int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": gvr.GroupVersion().String(),
			"kind":       "VirtualMachine",
			"metadata":   map[string]interface{}{"name": fmt.Sprintf("vm-%05d", n), "labels": map[string]interface{}{"app": "bench"}},
			"spec": map[string]interface{}{
				"runStrategy": runStrategy,
				"template": map[string]interface{}{
					"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "bench"}},
					"spec":     instanceSpec(),
				},
			},
		}}
	}
}

// vmiObject is the instance of vmObject's template.
func vmiObject(gvr schema.GroupVersionResource, n int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       "VirtualMachineInstance",
		"metadata":   map[string]interface{}{"name": fmt.Sprintf("vmi-%05d", n), "labels": map[string]interface{}{"app": "bench"}},
		"spec":       instanceSpec(),
	}}
}

func instanceSpec() map[string]interface{} {
	return map[string]interface{}{
		"domain": map[string]interface{}{
			"resources": map[string]interface{}{"requests": map[string]interface{}{"memory": "128Mi"}},
			"devices":   map[string]interface{}{"disks": []interface{}{map[string]interface{}{"name": "root", "disk": map[string]interface{}{"bus": "virtio"}}}},
		},
		"volumes": []interface{}{map[string]interface{}{"name": "root", "containerDisk": map[string]interface{}{"image": "example/disk"}}},
	}
}

// namespacePolicies gives a namespace a quota and a LimitRange roomy enough for every create,
// so the checks do their whole work.
func namespacePolicies(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "roomy"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100000"),
			corev1.ResourceRequestsMemory: resource.MustParse("100Ti")}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "roomy"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Let virt-api's informers see them before the clock starts.
	time.Sleep(time.Second)
}

// installCRD installs VirtualMachine's schema, as virt-api publishes it, as a CRD.
func installCRD(t *testing.T, c *framework.Cluster, client dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/kubevirt.io/v1").DoRaw(ctx)
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]map[string]interface{} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	vmSchema, err := crdSchema(doc.Components.Schemas, "v1.VirtualMachine")
	require.NoError(t, err)

	crdRes := client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": "virtualmachines.bench.hangar.io"},
		"spec": map[string]interface{}{
			"group": "bench.hangar.io",
			"scope": "Namespaced",
			"names": map[string]interface{}{"plural": "virtualmachines", "singular": "virtualmachine", "kind": "VirtualMachine", "listKind": "VirtualMachineList"},
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"schema":       map[string]interface{}{"openAPIV3Schema": vmSchema},
				"subresources": map[string]interface{}{"status": map[string]interface{}{}},
			}},
		},
	}}
	_, err = crdRes.Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crdRes.Get(ctx, "virtualmachines.bench.hangar.io", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conditions {
			m := cond.(map[string]interface{})
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the CRD is not established")
	// Discovery of the new group takes a moment in the dynamic client's server.
	time.Sleep(2 * time.Second)
}
