package v1

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// issue32VM is the VM of KubeVirt's current documentation that Hangar used to refuse with
// "unknown field": an instance type, a preference and a DataVolume template from a DataSource.
const issue32VM = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: it1, namespace: default}
spec:
  runStrategy: Halted
  instancetype: {name: u1.medium, kind: VirtualMachineClusterInstancetype}
  preference: {name: fedora}
  dataVolumeTemplates:
  - metadata: {name: it1-root}
    spec:
      sourceRef: {kind: DataSource, name: fedora, namespace: os-images}
      storage: {resources: {requests: {storage: 30Gi}}}
  template:
    spec:
      domain: {devices: {}}
      volumes: [{name: rootdisk, dataVolume: {name: it1-root, hotpluggable: true}}]
`

// TestDataVolumeTemplatesDecode: the VM decodes strictly (no unknown field), into the
// DataVolume fields, and encodes back to the same document in JSON and survives protobuf,
// virt-api's storage format.
func TestDataVolumeTemplatesDecode(t *testing.T) {
	raw, err := yaml.YAMLToJSON([]byte(issue32VM))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var vm VirtualMachine
	require.NoError(t, dec.Decode(&vm))

	require.Len(t, vm.Spec.DataVolumeTemplates, 1)
	dvt := vm.Spec.DataVolumeTemplates[0]
	assert.Equal(t, "it1-root", dvt.Name)
	require.NotNil(t, dvt.Spec.SourceRef)
	assert.Equal(t, "DataSource", dvt.Spec.SourceRef.Kind)
	assert.Equal(t, "os-images", *dvt.Spec.SourceRef.Namespace)
	assert.Equal(t, "30Gi", dvt.Spec.Storage.Resources.Requests.Storage().String())
	vol := vm.Spec.Template.Spec.Volumes[0]
	require.NotNil(t, vol.DataVolume)
	assert.Equal(t, DataVolumeSource{Name: "it1-root", Hotpluggable: true}, *vol.DataVolume)

	out, err := json.Marshal(&vm)
	require.NoError(t, err)
	var want, got map[string]any
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NoError(t, json.Unmarshal(out, &got))
	// The encoder adds the empty status.
	delete(got, "status")
	assert.Equal(t, want["spec"].(map[string]any)["dataVolumeTemplates"], got["spec"].(map[string]any)["dataVolumeTemplates"])
	assert.Equal(t, want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["volumes"],
		got["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["volumes"])

	pb, err := vm.Marshal()
	require.NoError(t, err)
	var back VirtualMachine
	require.NoError(t, back.Unmarshal(pb))
	assert.Equal(t, vm.Spec, back.Spec)
}
