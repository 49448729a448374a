package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const testInstall = `apiVersion: v1
kind: Namespace
metadata:
  name: hangar
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: last-without-newline
data: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hangar-operator
spec:
  template:
    spec:
      containers:
      - env:
        - name: VIRT_API_IMAGE
          value: virt-api
        - name: VIRT_CONTROLLER_IMAGE
          value: virt-controller
        - name: VIRT_HANDLER_IMAGE
          value: virt-handler
        - name: VIRT_LAUNCHER_IMAGE
          value: virt-launcher
        - name: HANGAR_ETCD_IMAGE
          value: etcd
        image: hangar-operator
`

func TestRelease(t *testing.T) {
	dir := t.TempDir()
	images := "hangar-operator=r/o:v1@sha256:1\nvirt-api=r/a:v1@sha256:2\nvirt-controller=r/c:v1@sha256:3\n" +
		"virt-handler=r/h:v1@sha256:4\nvirt-launcher=r/l:v1@sha256:5\netcd=r/e:v1@sha256:6\n"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	out := filepath.Join(dir, "out")
	require.NoError(t, run("v1.2.3", write("images.env", images), write("install.yaml", strings.TrimSuffix(testInstall, "\n")),
		write("cr.yaml", "apiVersion: hangarvm.io/v1alpha1\nkind: Hangar\nmetadata: {name: hangar}\nspec:\n  uninstallStrategy: RemoveWorkloads\n"), out))

	manifest, err := os.ReadFile(filepath.Join(out, "hangar.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(manifest), "image: r/o:v1@sha256:1")
	assert.Contains(t, string(manifest), "value: r/l:v1@sha256:5")
	assert.NotContains(t, string(manifest), "value: virt-api\n")

	chart, err := os.ReadFile(filepath.Join(out, "chart", "hangar", "templates", "install.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(chart), "kind: Namespace", "Helm's namespace")
	for _, doc := range strings.Split(string(chart), "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(doc, "{{", "#")), &obj), "every document parses: %q", doc)
	}
	assert.Contains(t, string(chart), "image: {{ .Values.images.operator | quote }}")
	values, err := os.ReadFile(filepath.Join(out, "chart", "hangar", "values.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(values), "uninstallStrategy: RemoveWorkloads")
	assert.Contains(t, string(values), "virtAPI: r/a:v1@sha256:2")
	chartYAML, err := os.ReadFile(filepath.Join(out, "chart", "hangar", "Chart.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(chartYAML), "version: 1.2.3")

	// An image not pinned by digest is refused.
	require.ErrorContains(t, run("v1.2.3", write("bad.env", strings.Replace(images, "@sha256:2", "", 1)),
		filepath.Join(dir, "install.yaml"), filepath.Join(dir, "cr.yaml"), out), "not an image pinned by digest")
}
