package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestDiscovery(t *testing.T) {
	for _, version := range []string{"kubevirt.io/v1", "kubevirt.io/v1alpha3"} {
		resources, err := api.Client.Discovery().ServerResourcesForGroupVersion(version)
		require.NoError(t, err, version)
		byName := map[string]metav1.APIResource{}
		for _, r := range resources.APIResources {
			byName[r.Name] = r
		}
		assert.ElementsMatch(t, []string{"vm", "vms"}, byName["virtualmachines"].ShortNames)
		assert.ElementsMatch(t, []string{"vmi", "vmis"}, byName["virtualmachineinstances"].ShortNames)
		assert.Contains(t, byName["virtualmachineinstancereplicasets"].ShortNames, "vmirs")
		for _, name := range []string{"virtualmachines", "virtualmachineinstances", "virtualmachineinstancereplicasets"} {
			assert.Equal(t, []string{"all"}, byName[name].Categories, name)
			assert.True(t, byName[name].Namespaced, name)
			assert.Contains(t, byName, name+"/status")
		}
		assert.Equal(t, "Scale", byName["virtualmachineinstancereplicasets/scale"].Kind)
		assert.Equal(t, "autoscaling", byName["virtualmachineinstancereplicasets/scale"].Group)
	}
	groups, err := api.Client.Discovery().ServerGroups()
	require.NoError(t, err)
	for _, g := range groups.Groups {
		if g.Name == v1.GroupName {
			assert.Equal(t, "v1", g.PreferredVersion.Version)
			return
		}
	}
	t.Fatal("kubevirt.io is not discovered")
}

// TestTableOutput asks for the server-side table kubectl get prints.
func TestTableOutput(t *testing.T) {
	ctx := context.Background()
	ns := "tables"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("printed", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = api.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("printed"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = api.Client.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("printed", 3), metav1.CreateOptions{})
	require.NoError(t, err)

	tests := []struct {
		resource string
		columns  []string
		cells    []interface{}
	}{
		{"virtualmachines", []string{"Name", "Age", "Status", "Ready"}, []interface{}{"printed", "", ""}},
		{"virtualmachineinstances", []string{"Name", "Age", "Phase", "IP", "NodeName", "Ready", "Paused"}, []interface{}{"printed", "", "", "", "", ""}},
		{"virtualmachineinstancereplicasets", []string{"Name", "Desired", "Current", "Ready", "Age"}, []interface{}{"printed", float64(3), float64(0), float64(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			raw, err := api.Client.KubevirtV1().RESTClient().Get().Namespace(ns).Resource(tc.resource).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
			require.NoError(t, err)
			var table metav1.Table
			require.NoError(t, json.Unmarshal(raw, &table))
			var names []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, c.Name)
			}
			assert.Equal(t, tc.columns, names)
			require.Len(t, table.Rows, 1)
			cells := table.Rows[0].Cells
			// Age is relative; everything else is compared.
			ageless := append([]interface{}{}, cells[:len(cells)]...)
			for i, c := range table.ColumnDefinitions {
				if c.Name == "Age" {
					ageless = append(ageless[:i], ageless[i+1:]...)
				}
			}
			assert.Equal(t, tc.cells, ageless)
		})
	}
}

// TestOpenAPI checks that every kind has its real schema, with descriptions, in both
// OpenAPI documents and for both versions: kubectl explain and server-side apply read them.
func TestOpenAPI(t *testing.T) {
	ctx := context.Background()
	raw, err := api.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v2").DoRaw(ctx)
	require.NoError(t, err)
	var v2 struct {
		Definitions map[string]struct {
			Description string                     `json:"description"`
			GVK         []map[string]string        `json:"x-kubernetes-group-version-kind"`
			Properties  map[string]json.RawMessage `json:"properties"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(raw, &v2))
	wanted := map[string]bool{"VirtualMachine": true, "VirtualMachineInstance": true, "VirtualMachineInstanceReplicaSet": true}
	found := map[string]bool{}
	for name, def := range v2.Definitions {
		for _, gvk := range def.GVK {
			if gvk["group"] != v1.GroupName || !wanted[gvk["kind"]] {
				continue
			}
			found[gvk["version"]+"/"+gvk["kind"]] = true
			assert.NotEmpty(t, def.Description, name)
			_, hasSpec := def.Properties["spec"]
			assert.True(t, hasSpec, "%s has no spec schema", name)
		}
	}
	for _, version := range []string{"v1", "v1alpha3"} {
		for kind := range wanted {
			assert.True(t, found[version+"/"+kind], "OpenAPI v2 has no %s/%s", version, kind)
		}
	}

	for _, path := range []string{"/openapi/v3/apis/kubevirt.io/v1", "/openapi/v3/apis/kubevirt.io/v1alpha3"} {
		raw, err := api.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		require.NoError(t, err, path)
		var v3 struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(raw, &v3), path)
		assert.True(t, strings.Contains(string(raw), "RunStrategy is the requested running state"), "%s lacks the field descriptions", path)
		assert.NotEmpty(t, v3.Components.Schemas, path)
	}
}
