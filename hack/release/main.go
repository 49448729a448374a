// Command release writes a release's install artifacts from artifacts/install (rendered by
// `kubectl kustomize`) and the release's images, pinned by digest:
//
//   - hangar.yaml: the manifest `kubectl apply -f` installs (namespace, the Hangar object's
//     CustomResourceDefinition, the components' RBAC, hangar-operator with the images);
//   - hangar-cr.yaml: the default Hangar object (artifacts/examples/hangar.yaml);
//   - chart/hangar: a Helm chart of the same install, whose Hangar object is created after the
//     install and deleted (with Hangar) by a pre-delete hook before the rest goes.
//
// hack/release.sh builds and pushes the images and runs it:
//
//	release -version v0.1.0 -images images.env -install install.yaml -cr hangar.yaml -out DIR
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// image placeholders of artifacts/install/operator.yaml and the values that replace them.
var images = []struct {
	// key in images.env and in the chart's values (images.<value>)
	key, value string
	// placeholder is what operator.yaml holds: the image itself, or an env value.
	placeholder string
}{
	{"hangar-operator", "operator", "image: hangar-operator"},
	{"virt-api", "virtAPI", "value: virt-api"},
	{"virt-controller", "virtController", "value: virt-controller"},
	{"virt-handler", "virtHandler", "value: virt-handler"},
	{"virt-launcher", "virtLauncher", "value: virt-launcher"},
	{"etcd", "etcd", "value: etcd"},
}

func main() {
	version := flag.String("version", "", "the release's version (hack/version.sh)")
	imagesFile := flag.String("images", "", "NAME=IMAGE lines, one per image (hangar-operator, virt-api, ..., etcd), pinned by digest")
	install := flag.String("install", "", "artifacts/install rendered by kubectl kustomize")
	cr := flag.String("cr", "", "the default Hangar object (artifacts/examples/hangar.yaml)")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if err := run(*version, *imagesFile, *install, *cr, *out); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(version, imagesFile, installFile, crFile, out string) error {
	if version == "" || imagesFile == "" || installFile == "" || crFile == "" || out == "" {
		return fmt.Errorf("-version, -images, -install, -cr and -out are required")
	}
	refs, err := readImages(imagesFile)
	if err != nil {
		return err
	}
	install, err := os.ReadFile(installFile)
	if err != nil {
		return err
	}
	crData, err := os.ReadFile(crFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "chart", "hangar", "templates"), 0o755); err != nil {
		return err
	}
	manifest, err := substitute(string(install), func(i int) string { return refs[images[i].key] })
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Hangar %s: kubectl apply --server-side -f hangar.yaml, then apply a Hangar object\n"+
		"# (hangar-cr.yaml) and wait: kubectl wait hangar/hangar --for=condition=Available --timeout=15m\n", version)
	if err := os.WriteFile(filepath.Join(out, "hangar.yaml"), []byte(header+manifest), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "hangar-cr.yaml"), crData, 0o644); err != nil {
		return err
	}
	return writeChart(filepath.Join(out, "chart", "hangar"), version, string(install), crData, refs)
}

// readImages reads NAME=IMAGE lines and checks every image is there, pinned by digest.
func readImages(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, ref, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not NAME=IMAGE", file, line)
		}
		refs[name] = ref
	}
	for _, i := range images {
		ref := refs[i.key]
		if !strings.Contains(ref, "@sha256:") {
			return nil, fmt.Errorf("%s: %s is %q, not an image pinned by digest", file, i.key, ref)
		}
	}
	return refs, nil
}

// substitute replaces each image placeholder, which must occur exactly once.
func substitute(manifest string, value func(i int) string) (string, error) {
	for i, img := range images {
		if n := strings.Count(manifest, img.placeholder); n != 1 {
			return "", fmt.Errorf("the install manifest holds %q %d times, not once", img.placeholder, n)
		}
		key, _, _ := strings.Cut(img.placeholder, ": ")
		manifest = strings.Replace(manifest, img.placeholder, key+": "+value(i), 1)
	}
	return manifest, nil
}

// documents splits a multi-document YAML stream.
func documents(stream string) []string {
	var docs []string
	for _, d := range strings.Split("\n"+stream, "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, strings.Trim(d, "\n"))
		}
	}
	return docs
}

func writeChart(dir, version, install string, cr []byte, refs map[string]string) error {
	chartVersion := strings.TrimPrefix(version, "v")
	chart := fmt.Sprintf(`apiVersion: v2
name: hangar
description: Hangar runs KVM virtual machines on Kubernetes, KubeVirt-compatible on the wire.
type: application
version: %s
appVersion: %q
`, chartVersion, version)
	var crObj struct {
		Spec map[string]interface{} `json:"spec"`
	}
	if err := yaml.Unmarshal(cr, &crObj); err != nil {
		return fmt.Errorf("the Hangar object: %w", err)
	}
	values := map[string]interface{}{"images": map[string]string{}, "hangar": crObj.Spec}
	for _, i := range images {
		values["images"].(map[string]string)[i.value] = refs[i.key]
	}
	valuesYAML, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	valuesYAML = append([]byte("# images: the release's, pinned by digest. hangar: the Hangar object's spec (kubectl explain hangar.spec).\n"), valuesYAML...)

	// The namespace is Helm's (install with --namespace hangar --create-namespace); the
	// operator labels it for Pod Security.
	var templates []string
	for _, doc := range documents(install) {
		if strings.Contains(doc, "\nkind: Namespace\n") || strings.HasPrefix(doc, "apiVersion: v1\nkind: Namespace\n") {
			continue
		}
		templates = append(templates, doc)
	}
	installTemplate, err := substitute(strings.Join(templates, "\n---\n"), func(i int) string {
		return fmt.Sprintf("{{ .Values.images.%s | quote }}", images[i].value)
	})
	if err != nil {
		return err
	}
	files := map[string]string{
		"Chart.yaml":               chart,
		"values.yaml":              string(valuesYAML),
		"templates/install.yaml":   installTemplate,
		"templates/hangar.yaml":    hangarTemplate,
		"templates/uninstall.yaml": uninstallTemplate,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// hangarTemplate is the Hangar object, created once the install is in (its
// CustomResourceDefinition comes with the chart) and never touched by upgrades: the operator
// owns it from then on, and the pre-delete hook deletes it.
const hangarTemplate = `apiVersion: hangarvm.io/v1alpha1
kind: Hangar
metadata:
  name: hangar
  annotations:
    helm.sh/hook: post-install
spec:
{{ toYaml .Values.hangar | indent 2 }}
`

// uninstallTemplate deletes the Hangar object and waits until the operator has removed
// Hangar, before Helm deletes the operator, its rights and the CustomResourceDefinition.
const uninstallTemplate = `apiVersion: batch/v1
kind: Job
metadata:
  name: hangar-uninstall
  namespace: hangar
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 3
  template:
    spec:
      serviceAccountName: hangar-operator
      restartPolicy: OnFailure
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: uninstall
        image: {{ .Values.images.operator | quote }}
        args: [uninstall, --timeout=30m]
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: [ALL]
`
