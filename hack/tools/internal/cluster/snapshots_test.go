package cluster

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/hangarvm/hangar/hack/tools/internal/localcsi"
)

func TestSnapshotsSetting(t *testing.T) {
	tests := []struct {
		value string
		want  bool
		err   bool
	}{
		{value: "", want: false},
		{value: "0", want: false},
		{value: "1", want: true},
		{value: "yes", err: true},
		{value: "true", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Setenv("HANGAR_CLUSTER_DIR", t.TempDir())
			t.Setenv("HANGAR_CLUSTER_SNAPSHOTS", tt.value)
			s, err := FromEnv(t.TempDir())
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.Snapshots)
		})
	}
}

// decodeAll splits manifests into objects.
func decodeAll(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

func TestSnapshotManifests(t *testing.T) {
	s := testSettings(t, nil)
	objs := decodeAll(t, s.snapshotManifests())
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()+"/"+o.GetName()] = o
	}
	for _, want := range []string{"Namespace/" + CSINamespace, "Deployment/snapshot-controller", "DaemonSet/hangar-local-csi",
		"CSIDriver/" + CSIDriverName, "StorageClass/" + SnapshotClass, "VolumeSnapshotClass/" + SnapshotClass} {
		require.Contains(t, byKind, want)
	}
	// Every built-in object decodes strictly (no unknown or misplaced field); the
	// VolumeSnapshotClass has only the fields of its CRD.
	strict := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	for _, o := range objs {
		if o.GetKind() == "VolumeSnapshotClass" {
			for field := range o.Object {
				assert.Contains(t, []string{"apiVersion", "kind", "metadata", "driver", "deletionPolicy", "parameters"}, field)
			}
			continue
		}
		b, err := o.MarshalJSON()
		require.NoError(t, err)
		_, _, err = strict.Decode(b, nil, nil)
		require.NoError(t, err, "%s %s", o.GetKind(), o.GetName())
	}

	// The names the manifests use are the driver's own.
	assert.Equal(t, localcsi.DriverName, CSIDriverName)
	assert.Equal(t, localcsi.DriverName, byKind["StorageClass/"+SnapshotClass].Object["provisioner"])
	assert.Equal(t, localcsi.DriverName, byKind["VolumeSnapshotClass/"+SnapshotClass].Object["driver"])
	assert.Equal(t, "WaitForFirstConsumer", byKind["StorageClass/"+SnapshotClass].Object["volumeBindingMode"])
	assert.Equal(t, "true", byKind["VolumeSnapshotClass/"+SnapshotClass].GetAnnotations()["snapshot.storage.kubernetes.io/is-default-class"])

	// Each node's sidecars serve that node's volumes only, on the driver's socket.
	ds := byKind["DaemonSet/hangar-local-csi"]
	containers, _, err := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 2)
	for _, c := range containers {
		c := c.(map[string]any)
		args := strings.Join(toStrings(c["args"]), " ")
		assert.Contains(t, args, "--node-deployment=true", c["name"])
		assert.Contains(t, args, "--csi-address=/csi/csi.sock", c["name"])
	}
	volumes, _, err := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	require.NoError(t, err)
	hostPath, _, _ := unstructured.NestedString(volumes[0].(map[string]any), "hostPath", "path")
	assert.Equal(t, localcsi.NewOptions().Endpoint, hostPath+"/csi.sock", "the sidecars dial the socket the driver listens on")

	args, _, err := unstructured.NestedSlice(byKind["Deployment/snapshot-controller"].Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	assert.Contains(t, toStrings(args[0].(map[string]any)["args"]), "--enable-distributed-snapshotting=true")
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestSnapshotCRDs reads the CRDs of the pinned client module as up does: the names kubectl
// waits for are the CRDs' own.
func TestSnapshotCRDs(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to find the module cache with")
	}
	dir, err := moduleDir(SnapshotClientModule + "@" + SnapshotterVersion)
	require.NoError(t, err, "the Go module proxy serves %s@%s", SnapshotClientModule, SnapshotterVersion)
	docs, names, err := snapshotCRDs(dir)
	require.NoError(t, err)
	var got []string
	for _, o := range decodeAll(t, docs) {
		require.Equal(t, "CustomResourceDefinition", o.GetKind())
		got = append(got, "crd/"+o.GetName())
	}
	assert.Equal(t, names, got)
	assert.Contains(t, names, "crd/volumesnapshots.snapshot.storage.k8s.io")
	assert.Contains(t, names, "crd/volumesnapshotclasses.snapshot.storage.k8s.io")
	assert.Contains(t, names, "crd/volumesnapshotcontents.snapshot.storage.k8s.io")

	_, _, err = snapshotCRDs(t.TempDir())
	require.Error(t, err, "a module without CRDs is refused")
}
