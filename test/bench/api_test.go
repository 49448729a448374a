//go:build bench

// Package bench measures Hangar's API against the same schema served as a CRD by the same
// kube-apiserver. Run it with hack/bench-api.sh; it prints figures and fails only on errors.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
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

	"github.com/hangarvm/hangar/pkg/podadmission"
	"github.com/hangarvm/hangar/pkg/virtapi"
	"github.com/hangarvm/hangar/test/integration/framework"
)

var crdGVR = schema.GroupVersionResource{Group: "bench.hangar.io", Version: "v1", Resource: "virtualmachines"}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestAPIThroughput(t *testing.T) {
	count, workers, lists := envInt("BENCH_VMS", 5000), envInt("BENCH_WORKERS", 16), envInt("BENCH_LISTS", 5)
	// BENCH_LAUNCHER_POD_CHECKS=off measures virt-api without the HangarLauncherPod admission
	// plugin, for a before/after pair on the same code.
	checks := os.Getenv("BENCH_LAUNCHER_POD_CHECKS") != "off"
	c := framework.StartAggregatedWith(t, func(o *virtapi.Options) {
		if !checks {
			o.RecommendedOptions.Admission.DisablePlugins = []string{podadmission.PluginName}
		}
	})
	ctx := context.Background()
	client, err := dynamic.NewForConfig(c.Admin)
	require.NoError(t, err)
	installCRD(t, c, client)

	vmGVR := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	// The first two compare Hangar with a CRD on VMs that do not run (Halted). The others are
	// the creates that pay for the launcher pod checks (the pod is built and checked against
	// the namespace): VMs that run, and instances.
	apis := []struct {
		name   string
		gvr    schema.GroupVersionResource
		object func(schema.GroupVersionResource, int) *unstructured.Unstructured
	}{
		{"kube-apiserver -> virt-api", vmGVR, vmObject("Halted")},
		{"CRD in kube-apiserver", crdGVR, vmObject("Halted")},
		{"virt-api, VMs Always", vmGVR, vmObject("Always")},
		{"virt-api, instances", vmiGVR, vmiObject},
	}
	const checkedFrom = 2 // these namespaces get a quota and a LimitRange for the checks to look at
	type result struct {
		createsPerSecond                  float64
		listP50, listP95, listAllInOneP50 time.Duration
	}
	results := make([]result, len(apis))
	for i, a := range apis {
		ns := fmt.Sprintf("bench-%d", i)
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		if i >= checkedFrom {
			namespacePolicies(t, c, ns)
		}
		res := client.Resource(a.gvr).Namespace(ns)

		start := time.Now()
		jobs := make(chan int)
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range jobs {
					if _, err := res.Create(ctx, a.object(a.gvr, n), metav1.CreateOptions{}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for n := 0; n < count; n++ {
			jobs <- n
		}
		close(jobs)
		wg.Wait()
		close(errs)
		require.NoError(t, <-errs)
		results[i].createsPerSecond = float64(count) / time.Since(start).Seconds()

		// Lists as kubectl does them (pages of 500), and in one piece.
		var paged, whole []time.Duration
		for l := 0; l < lists; l++ {
			start := time.Now()
			total, cont := 0, ""
			for {
				list, err := res.List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
				require.NoError(t, err)
				total += len(list.Items)
				if cont = list.GetContinue(); cont == "" {
					break
				}
			}
			paged = append(paged, time.Since(start))
			require.Equal(t, count, total)
			start = time.Now()
			list, err := res.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			whole = append(whole, time.Since(start))
			require.Len(t, list.Items, count)
		}
		results[i].listP50, results[i].listP95 = percentile(paged, 50), percentile(paged, 95)
		results[i].listAllInOneP50 = percentile(whole, 50)
	}

	fmt.Printf("\nAPI throughput: %d objects per row, %d concurrent clients, %d lists each; launcher pod checks %s\n",
		count, workers, lists, map[bool]string{true: "on", false: "off"}[checks])
	fmt.Printf("%-28s %12s %14s %14s %16s\n", "API", "creates/s", "list p50", "list p95", "list (1 page) p50")
	for i, a := range apis {
		r := results[i]
		fmt.Printf("%-28s %12.0f %14s %14s %16s\n", a.name, r.createsPerSecond,
			r.listP50.Round(time.Millisecond), r.listP95.Round(time.Millisecond), r.listAllInOneP50.Round(time.Millisecond))
	}
	fmt.Printf("ratio Hangar/CRD: creates %.2f, list p50 %.2f\n\n",
		results[0].createsPerSecond/results[1].createsPerSecond,
		float64(results[0].listP50)/float64(results[1].listP50))
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

func percentile(d []time.Duration, p int) time.Duration {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	idx := (len(sorted)*p + 99) / 100
	if idx > 0 {
		idx--
	}
	return sorted[idx]
}

// vmObject makes a small VirtualMachine with the given run strategy, the same for both APIs
// but for the group.
func vmObject(runStrategy string) func(schema.GroupVersionResource, int) *unstructured.Unstructured {
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
	vmSchema, err := crdSchema(doc.Components.Schemas, "com.github.hangarvm.hangar.pkg.apis.kubevirt.v1.VirtualMachine")
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
