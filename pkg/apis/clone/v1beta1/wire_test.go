package v1beta1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubeVirtManifestDecodes: a clone as KubeVirt's manifests and clients write it decodes
// into every field and encodes back to the same document.
func TestKubeVirtManifestDecodes(t *testing.T) {
	manifest := `{
  "apiVersion": "clone.kubevirt.io/v1beta1",
  "kind": "VirtualMachineClone",
  "metadata": {"name": "db-clone", "namespace": "default"},
  "spec": {
    "source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "db"},
    "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "db-2"},
    "labelFilters": ["*", "!team"],
    "annotationFilters": ["note/*"],
    "template": {"labelFilters": ["app"], "annotationFilters": ["!secret"]},
    "newMacAddresses": {"default": "02:00:00:00:00:01"},
    "newSMBiosSerial": "serial-2",
    "patches": ["{\"op\":\"replace\",\"path\":\"/spec/runStrategy\",\"value\":\"Halted\"}"]
  },
  "status": {
    "phase": "Succeeded",
    "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": null, "reason": "Done"}],
    "snapshotName": "tmp-snapshot",
    "restoreName": "tmp-restore",
    "targetName": "db-2",
    "creationTime": "2026-01-02T03:04:05Z"
  }
}`
	var c VirtualMachineClone
	require.NoError(t, json.Unmarshal([]byte(manifest), &c))
	assert.Equal(t, "db", c.Spec.Source.Name)
	assert.Equal(t, "db-2", c.Spec.Target.Name)
	assert.Equal(t, []string{"!secret"}, c.Spec.Template.AnnotationFilters)
	assert.Equal(t, "02:00:00:00:00:01", c.Spec.NewMacAddresses["default"])
	assert.Equal(t, "serial-2", *c.Spec.NewSMBiosSerial)
	assert.Equal(t, Succeeded, c.Status.Phase)
	assert.Equal(t, "tmp-restore", *c.Status.RestoreName)
	require.Len(t, c.Status.Conditions, 1)
	assert.Equal(t, "Done", c.Status.Conditions[0].Reason)

	out, err := json.Marshal(&c)
	require.NoError(t, err)
	assert.JSONEq(t, manifest, string(out))
}
