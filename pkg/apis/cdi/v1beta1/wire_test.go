package v1beta1

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/randfill"
)

// decodeStrict decodes in into out, refusing unknown fields, and answers out's encoding.
func decodeStrict(t *testing.T, in []byte, out any) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(out), "%s", in)
	back, err := json.Marshal(out)
	require.NoError(t, err)
	return string(back)
}

// Quantities (resources) are not filled at random: their JSON is a canonical string that a
// random struct does not make. TestManifest covers them.
var skipResources = regexp.MustCompile(`^Resources$`)

// TestSpecIsCDIs: a DataVolumeSpec filled at random as CDI's own type (CDI's API module,
// kubevirt.io/containerized-data-importer-api) decodes into Hangar's copy with no field
// unknown and encodes back to the same JSON, and the other way round. So every field of CDI's
// spec, and no other, survives virt-api.
func TestSpecIsCDIs(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		f := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 2).SkipFieldsWithPattern(skipResources)
		var theirs cdi.DataVolumeSpec
		f.Fill(&theirs)
		raw, err := json.Marshal(&theirs)
		require.NoError(t, err)
		var ours DataVolumeSpec
		assert.JSONEq(t, string(raw), decodeStrict(t, raw, &ours))

		var mine DataVolumeSpec
		f.Fill(&mine)
		raw, err = json.Marshal(&mine)
		require.NoError(t, err)
		var cdis cdi.DataVolumeSpec
		assert.JSONEq(t, string(raw), decodeStrict(t, raw, &cdis))
	}
}

// TestManifest: the spec of KubeVirt's documented DataVolume templates decodes into every
// field and encodes back unchanged.
func TestManifest(t *testing.T) {
	manifest := `{
  "sourceRef": {"kind": "DataSource", "name": "fedora", "namespace": "os-images"},
  "storage": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "30Gi"}}, "storageClassName": "local", "volumeMode": "Block"},
  "pvc": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}},
  "source": {"registry": {"url": "docker://quay.io/containerdisks/fedora:41", "pullMethod": "node"}, "http": {"url": "https://example.org/disk.img", "extraHeaders": ["X-A: b"]}, "blank": {}},
  "contentType": "kubevirt",
  "preallocation": true
}`
	var s DataVolumeSpec
	require.NoError(t, json.Unmarshal([]byte(manifest), &s))
	assert.Equal(t, "os-images", *s.SourceRef.Namespace)
	assert.Equal(t, "30Gi", s.Storage.Resources.Requests.Storage().String())
	assert.Equal(t, "node", string(*s.Source.Registry.PullMethod))
	assert.NotNil(t, s.Source.Blank)
	out, err := json.Marshal(&s)
	require.NoError(t, err)
	assert.JSONEq(t, manifest, string(out))
}
