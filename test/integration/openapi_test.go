package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/kube-openapi/pkg/validation/spec"

	generatedopenapi "github.com/hangarvm/hangar/pkg/generated/openapi"
)

// kubevirtNames are names from KubeVirt's OpenAPI (testdata/kubevirt-openapi-names.json says
// from which commit): its models, and its operations under kubevirt.io and
// subresources.kubevirt.io/v1.
type kubevirtNames struct {
	Models     []string `json:"models"`
	Operations []struct {
		Path, Method, OperationID string
		// Query are the operation's query parameters; JSONBody says whether it takes a JSON
		// body. A generated method takes a params argument when there are query parameters,
		// and a typed body when the body is JSON.
		Query    []string `json:"query"`
		JSONBody bool     `json:"jsonBody"`
	} `json:"operations"`
}

func loadKubeVirtNames(t *testing.T) kubevirtNames {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "kubevirt-openapi-names.json"))
	require.NoError(t, err)
	var names kubevirtNames
	require.NoError(t, json.Unmarshal(raw, &names))
	return names
}

// hangarOnlyModels are kubevirt.io/v1 models KubeVirt's OpenAPI has not: the body of the
// kubevirt.io softreboot (KubeVirt's takes none).
var hangarOnlyModels = map[string]bool{"v1.SoftRebootOptions": true}

// instancetypeModels are the models of instancetype.kubevirt.io/v1beta1, named v1beta1.<Type>
// as KubeVirt's Go client names them. KubeVirt serves the group from CustomResourceDefinitions,
// so its swagger.json (the testdata) has none of them to compare with.
// v1beta1Models are the v1beta1.<Type> names of the models of the packages: KubeVirt names
// every v1beta1 group's models so (instancetype.kubevirt.io's, snapshot.kubevirt.io's,
// clone.kubevirt.io's, whose conditions are the snapshot group's type), and
// no two of Hangar's v1beta1 packages share a type name.
func v1beta1Models(t *testing.T, pkgs ...string) map[string]bool {
	out := map[string]bool{}
	for name := range generatedopenapi.GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} }) {
		for _, pkg := range pkgs {
			if strings.HasPrefix(name, pkg) {
				model := "v1beta1." + strings.TrimPrefix(name, pkg)
				assert.False(t, out[model], "two v1beta1 packages have the model %s", model)
				out[model] = true
			}
		}
	}
	return out
}

func getOpenAPI(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := api.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
	require.NoError(t, err, path)
	return raw
}

// refs are the targets of every $ref in a document.
var refPattern = regexp.MustCompile(`"\$ref":\s*"#/(?:definitions|components/schemas)/([^"]+)"`)

// TestOpenAPIModelNamesAreKubeVirts checks that every model virt-api serves is named as
// KubeVirt's OpenAPI names it, in both documents: each kind it serves under KubeVirt's name for
// it, kubevirt.io/v1's other types as v1.<Type> where KubeVirt has them, Kubernetes' types by
// import path. Clients generated from either document then have the same type names.
func TestOpenAPIModelNamesAreKubeVirts(t *testing.T) {
	names := loadKubeVirtNames(t)
	kubevirt := map[string]bool{}
	for _, m := range names.Models {
		kubevirt[m] = true
	}

	var v2 struct {
		Definitions map[string]struct {
			GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
		} `json:"definitions"`
	}
	rawV2 := getOpenAPI(t, "/openapi/v2")
	require.NoError(t, json.Unmarshal(rawV2, &v2))
	kinds := map[string]bool{}
	for name, def := range v2.Definitions {
		for _, gvk := range def.GVK {
			// The group lists Kubernetes' options and WatchEvent too, under their own names.
			if gvk["group"] == "kubevirt.io" && !strings.HasPrefix(name, "k8s.io.apimachinery.pkg.apis.meta.v1.") {
				assert.Equal(t, "v1."+gvk["kind"], name, "the model of %v", gvk)
				kinds[gvk["kind"]] = true
			}
		}
	}
	for _, kind := range []string{"VirtualMachine", "VirtualMachineInstance", "VirtualMachineInstanceReplicaSet",
		"VirtualMachineInstanceMigration", "StartOptions", "StopOptions", "MigrateOptions", "PauseOptions"} {
		assert.True(t, kinds[kind], "no model has the kind %s", kind)
		assert.True(t, kubevirt["v1."+kind], "KubeVirt's list lacks v1.%s", kind)
		assert.True(t, kinds[kind+"List"] || strings.HasSuffix(kind, "Options"), "no model has the kind %sList", kind)
	}

	instancetypes := v1beta1Models(t, "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1.", "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1.",
		"github.com/hangarvm/hangar/pkg/apis/clone/v1beta1.", "github.com/hangarvm/hangar/pkg/apis/export/v1beta1.", "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1.")
	require.Contains(t, instancetypes, "v1beta1.VirtualMachineInstancetypeSpec")
	require.Contains(t, instancetypes, "v1beta1.VirtualMachineSnapshotSpec")
	require.Contains(t, instancetypes, "v1beta1.VirtualMachineCloneSpec")
	require.Contains(t, instancetypes, "v1beta1.VirtualMachineExportSpec")
	// CDI's DataVolume spec, which kubevirt.io/v1's DataVolume templates embed, is
	// v1beta1.DataVolumeSpec in KubeVirt's swagger.json too.
	require.Contains(t, instancetypes, "v1beta1.DataVolumeSpec")
	docs := map[string][]byte{"/openapi/v2": rawV2}
	for _, gv := range []string{"apis/kubevirt.io/v1", "apis/kubevirt.io/v1alpha3", "apis/subresources.kubevirt.io/v1", "apis/instancetype.kubevirt.io/v1beta1",
		"apis/snapshot.kubevirt.io/v1beta1", "apis/clone.kubevirt.io/v1beta1", "apis/export.kubevirt.io/v1beta1"} {
		docs["/openapi/v3/"+gv] = getOpenAPI(t, "/openapi/v3/"+gv)
	}
	for path, raw := range docs {
		var doc struct {
			Definitions map[string]json.RawMessage `json:"definitions"`
			Components  struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(raw, &doc), path)
		models := doc.Definitions
		if models == nil {
			models = doc.Components.Schemas
		}
		require.NotEmpty(t, models, path)
		for name := range models {
			switch {
			case strings.HasPrefix(name, "v1."):
				assert.True(t, kubevirt[name] || hangarOnlyModels[name], "%s: %s is not a model of KubeVirt's", path, name)
			case strings.HasPrefix(name, "v1beta1."):
				assert.True(t, instancetypes[name], "%s: %s is not a model of a v1beta1 group (instancetype, snapshot, clone) or CDI's DataVolume spec", path, name)
			default:
				assert.True(t, strings.HasPrefix(name, "k8s.io."), "%s: %s is not named by its import path", path, name)
			}
		}
		for _, m := range refPattern.FindAllStringSubmatch(string(raw), -1) {
			name := strings.NewReplacer("~1", "/", "~0", "~").Replace(m[1])
			assert.Contains(t, models, name, "%s refers to a model it has not", path)
		}
	}
}

// queryNotServed are query parameters of KubeVirt's operations that virt-api does not serve,
// and so does not list: exact and export, which Kubernetes removed from reads in 1.18;
// includeUninitialized, which it removed in 1.14; v1VNC's preserveSession and
// v1VNCScreenshot's moveCursor, which virt-api does not implement. A program that sets them
// through a client generated from KubeVirt's document does not compile against one generated
// from virt-api's. KubeVirt's deleteCollection operations also list watch, which a deletion
// does not do.
var queryNotServed = map[string]bool{"exact": true, "export": true, "includeUninitialized": true, "preserveSession": true, "moveCursor": true}

func queryServed(operationID, param string) bool {
	return !queryNotServed[param] && (param != "watch" || !strings.HasPrefix(operationID, "deleteCollection"))
}

// v2Document is what TestOpenAPIOperationIDsAreKubeVirts reads of the v2 document.
type v2Document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Parameters map[string]v2Param                    `json:"parameters"`
}

type v2Param struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

type v2Operation struct {
	OperationID string    `json:"operationId"`
	Parameters  []v2Param `json:"parameters"`
	Consumes    []string  `json:"consumes"`
}

// query lists the query parameters of op, its own and its path's.
func (d v2Document) query(path string, op v2Operation) []string {
	var shared []v2Param
	if raw, ok := d.Paths[path]["parameters"]; ok {
		_ = json.Unmarshal(raw, &shared)
	}
	var names []string
	for _, p := range append(shared, op.Parameters...) {
		if p.Ref != "" {
			p = d.Parameters[strings.TrimPrefix(p.Ref, "#/parameters/")]
		}
		if p.In == "query" {
			names = append(names, p.Name)
		}
	}
	return names
}

// TestOpenAPIOperationIDsAreKubeVirts checks that every operation virt-api serves on one of
// KubeVirt's paths has KubeVirt's operation ID (generated clients name their methods after
// them) and that every ID is unique in the v2 document, which holds every group. Each of those
// operations also has query parameters if and only if KubeVirt's has (KubeVirt's own, but for
// queryNotServed), and a JSON body where KubeVirt's has: the methods generated from either
// document then take the same arguments.
func TestOpenAPIOperationIDsAreKubeVirts(t *testing.T) {
	names := loadKubeVirtNames(t)
	var v2 v2Document
	require.NoError(t, json.Unmarshal(getOpenAPI(t, "/openapi/v2"), &v2))
	ids := map[string]string{}
	for path, item := range v2.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s %s and %s share the operation ID %s", method, path, other, op.OperationID)
			}
			ids[op.OperationID] = method + " " + path
		}
	}

	matched := map[string]bool{}
	for _, want := range names.Operations {
		item, ok := v2.Paths[want.Path]
		if !ok {
			continue // a path of a kind or subresource Hangar does not serve
		}
		raw, ok := item[want.Method]
		if !assert.True(t, ok, "%s %s is not served", want.Method, want.Path) {
			continue
		}
		var op v2Operation
		require.NoError(t, json.Unmarshal(raw, &op))
		assert.Equal(t, want.OperationID, op.OperationID, "%s %s", want.Method, want.Path)
		matched[want.OperationID] = true

		query := v2.query(want.Path, op)
		for _, q := range want.Query {
			if queryServed(want.OperationID, q) {
				assert.Contains(t, query, q, "%s: a query parameter of KubeVirt's", want.OperationID)
			}
		}
		if len(want.Query) == 0 {
			assert.Empty(t, query, "%s: KubeVirt's has no query parameters", want.OperationID)
		}
		if want.JSONBody {
			assert.Contains(t, op.Consumes, "application/json", "%s: KubeVirt's takes a JSON body", want.OperationID)
		}
	}
	// The operations a client of the actions needs, at least, are among them.
	for _, id := range []string{"createNamespacedVirtualMachine", "readNamespacedVirtualMachine", "listNamespacedVirtualMachineInstance",
		"watchNamespacedVirtualMachine", "deleteCollectionNamespacedVirtualMachine", "createNamespacedVirtualMachineInstanceMigration",
		"v1Start", "v1Stop", "v1Restart", "v1Migrate", "v1Pause", "v1Unpause", "v1SoftReboot", "v1Freeze", "v1Unfreeze",
		"v1Console", "v1VNC", "v1VNCScreenshot", "v1Guestosinfo", "v1Userlist", "v1Filesystemlist"} {
		assert.True(t, matched[id], "%s is not served under KubeVirt's path", id)
	}
}

// openAPIOperation is the part of an operation, in either document, that the actions' and
// streams' documentation is about.
type openAPIOperation struct {
	Action     string          `json:"x-kubernetes-action"`
	Subproto   []string        `json:"x-websocket-subprotocols"`
	Parameters []openAPIParam  `json:"parameters"`
	Body       *openAPIContent `json:"requestBody"`
	Responses  map[string]struct {
		Schema  *openAPISchema            `json:"schema"`
		Content map[string]openAPIContent `json:"content"`
	} `json:"responses"`
}

type openAPIParam struct {
	In     string         `json:"in"`
	Schema *openAPISchema `json:"schema"`
}

type openAPIContent struct {
	Schema  *openAPISchema            `json:"schema"`
	Content map[string]openAPIContent `json:"content"`
}

type openAPISchema struct {
	Ref string `json:"$ref"`
}

// bodyRef is the model an operation's body refers to, in either document ("" for none).
func (op openAPIOperation) bodyRef() string {
	for _, p := range op.Parameters {
		if p.In == "body" && p.Schema != nil {
			return p.Schema.Ref
		}
	}
	if op.Body != nil {
		for _, c := range op.Body.Content {
			return c.Schema.Ref
		}
	}
	return ""
}

// responseRef is the model of an answer ("" for no body) and whether the answer is listed.
func (op openAPIOperation) responseRef(code string) (string, bool) {
	r, ok := op.Responses[code]
	if !ok {
		return "", false
	}
	if r.Schema != nil {
		return r.Schema.Ref, true
	}
	for _, c := range r.Content {
		return c.Schema.Ref, true
	}
	return "", true
}

// TestOpenAPIDocumentsActionsAndStreams checks what both documents say of the actions and
// streams, in both groups: KubeVirt's option bodies, 202 with a Status in kubevirt.io and with
// no body in subresources.kubevirt.io, the 4xx a client should handle, and websocket upgrades.
func TestOpenAPIDocumentsActionsAndStreams(t *testing.T) {
	type action struct{ resource, name, body string }
	actions := []action{
		{"virtualmachines", "start", "v1.StartOptions"}, {"virtualmachines", "stop", "v1.StopOptions"},
		{"virtualmachines", "restart", "v1.RestartOptions"}, {"virtualmachines", "migrate", "v1.MigrateOptions"},
		{"virtualmachineinstances", "pause", "v1.PauseOptions"}, {"virtualmachineinstances", "unpause", "v1.UnpauseOptions"},
		{"virtualmachineinstances", "softreboot", "v1.SoftRebootOptions"},
		{"virtualmachineinstances", "addvolume", "v1.AddVolumeOptions"}, {"virtualmachineinstances", "removevolume", "v1.RemoveVolumeOptions"},
		{"virtualmachines", "addvolume", "v1.AddVolumeOptions"}, {"virtualmachines", "removevolume", "v1.RemoveVolumeOptions"},
		{"virtualmachines", "memorydump", "v1.VirtualMachineMemoryDumpRequest"}, {"virtualmachines", "removememorydump", ""},
	}
	subresourcesOnly := []action{
		{"virtualmachineinstances", "freeze", "v1.FreezeUnfreezeTimeout"}, {"virtualmachineinstances", "unfreeze", ""},
	}
	const status = "k8s.io.apimachinery.pkg.apis.meta.v1.Status"
	type document struct {
		path, refPrefix string
		groups          []string
	}
	for _, doc := range []document{
		{"/openapi/v2", "#/definitions/", []string{"/apis/kubevirt.io/v1", "/apis/kubevirt.io/v1alpha3", "/apis/subresources.kubevirt.io/v1"}},
		{"/openapi/v3/apis/kubevirt.io/v1", "#/components/schemas/", []string{"/apis/kubevirt.io/v1"}},
		{"/openapi/v3/apis/subresources.kubevirt.io/v1", "#/components/schemas/", []string{"/apis/subresources.kubevirt.io/v1"}},
	} {
		var parsed struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		require.NoError(t, json.Unmarshal(getOpenAPI(t, doc.path), &parsed), doc.path)
		operation := func(path, method string) openAPIOperation {
			t.Helper()
			raw, ok := parsed.Paths[path][method]
			require.True(t, ok, "%s has no %s %s", doc.path, method, path)
			var op openAPIOperation
			require.NoError(t, json.Unmarshal(raw, &op))
			return op
		}
		for _, group := range doc.groups {
			kubevirtGroup := !strings.Contains(group, "subresources")
			methods, list, accepted := []string{"put"}, subresourcesOnly, ""
			if kubevirtGroup {
				// The kubevirt.io actions answer a Status, which the generated clientset decodes.
				methods, list, accepted = []string{"put", "post"}, nil, doc.refPrefix+status
			}
			for _, a := range append(append([]action{}, actions...), list...) {
				body := a.body
				if !kubevirtGroup && a.name == "softreboot" {
					body = "" // as KubeVirt's
				}
				path := group + "/namespaces/{namespace}/" + a.resource + "/{name}/" + a.name
				for _, method := range methods {
					op := operation(path, method)
					where := doc.path + " " + method + " " + path
					if body == "" {
						assert.Empty(t, op.bodyRef(), where)
					} else {
						assert.Equal(t, doc.refPrefix+body, op.bodyRef(), where)
					}
					ref, ok := op.responseRef("202")
					assert.True(t, ok, "%s: no 202", where)
					assert.Equal(t, accepted, ref, "%s: the 202's body", where)
					for _, code := range []string{"400", "404", "409", "422"} {
						ref, ok := op.responseRef(code)
						assert.True(t, ok, "%s: no %s", where, code)
						assert.Equal(t, doc.refPrefix+status, ref, "%s: the %s's body", where, code)
					}
					_, ok = op.responseRef("200")
					assert.False(t, ok, "%s: an action never answers 200", where)
					assert.Equal(t, "connect", op.Action, where)
				}
			}
			for _, stream := range []string{"console", "vnc"} {
				path := group + "/namespaces/{namespace}/virtualmachineinstances/{name}/" + stream
				op := operation(path, "get")
				ref, ok := op.responseRef("101")
				assert.True(t, ok, "%s: no 101", path)
				assert.Empty(t, ref, path)
				assert.Equal(t, []string{"plain.kubevirt.io"}, op.Subproto, path)
				assert.Equal(t, "connect", op.Action, path)
			}
		}
	}
}
