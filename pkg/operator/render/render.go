// Package render turns a Hangar object into the objects hangar-operator applies: the embedded
// component manifests (artifacts/components) with the images of the operator's version, the
// object's settings (replicas, placement, the etcd members and volume, the cluster
// configuration) and what the PKI decided (caBundles, the hashes of the trust bundles that
// restart the components which read them only at start). Pure: the same inputs give the same
// objects, so what the operator applies is table-tested without a cluster.
package render

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/hangarvm/hangar/artifacts/components"
	"github.com/hangarvm/hangar/artifacts/monitoring"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
)

// Namespace is where Hangar's components run; the install manifests create it.
const Namespace = "hangar"

// Labels on every object the operator owns: it finds them again by these (to prune what a
// newer version no longer has, and to remove them all).
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "hangar-operator"
	PartOfLabel    = "app.kubernetes.io/part-of"
	VersionLabel   = "app.kubernetes.io/version"
)

// Phase orders an install or upgrade: each phase's objects are applied once the phase before
// is ready, so the API is served throughout and no handler drives a launcher newer than itself.
type Phase int

const (
	// PhaseEtcd: Hangar's etcd, which virt-api needs first.
	PhaseEtcd Phase = iota
	// PhaseAPI: virt-api, its APIServices and eviction webhook.
	PhaseAPI
	// PhaseController: virt-controller and the cluster configuration.
	PhaseController
	// PhaseHandler: virt-handler, node by node.
	PhaseHandler
	// PhaseLaunchers: new launcher pods use the new launcher image (hangar-config), once every
	// handler runs the new version; running guests move by the workload update strategy.
	PhaseLaunchers
)

func (p Phase) String() string {
	return [...]string{"etcd", "virt-api", "virt-controller", "virt-handler", "launchers"}[p]
}

// monitoringPhase is when the monitoring objects (artifacts/monitoring) are applied: first,
// so that an installation that does not come up is watched, and alerted on, from its start.
const monitoringPhase = PhaseEtcd

// phaseOfFile says which phase a component manifest belongs to.
var phaseOfFile = map[string]Phase{
	"etcd.yaml":             PhaseEtcd,
	"virt-api.yaml":         PhaseAPI,
	"apiservices.yaml":      PhaseAPI,
	"webhooks.yaml":         PhaseAPI,
	"metrics.yaml":          PhaseController,
	"config.yaml":           PhaseController,
	"launcher-devices.yaml": PhaseController,
	"virt-controller.yaml":  PhaseController,
	"virt-handler.yaml":     PhaseHandler,
}

// Object is one object to apply, and its phase.
type Object struct {
	Phase  Phase
	Object runtime.Object
}

// scheme knows every kind the component manifests hold.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, admissionregistrationv1.AddToScheme, apiregistrationv1.AddToScheme, instancetypev1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Scheme is the scheme of the rendered objects.
func Scheme() *runtime.Scheme { return scheme }

// manifests decodes the embedded component manifests, in file order within each phase.
func manifests() ([]Object, error) {
	files, err := fs.Glob(components.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool {
		if phaseOfFile[files[i]] != phaseOfFile[files[j]] {
			return phaseOfFile[files[i]] < phaseOfFile[files[j]]
		}
		return files[i] < files[j]
	})
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var out []Object
	for _, name := range files {
		phase, ok := phaseOfFile[name]
		if !ok {
			return nil, fmt.Errorf("component manifest %s has no phase", name)
		}
		data, err := components.FS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, Object{Phase: phase, Object: obj})
		}
	}
	watched, err := monitoring.Objects(Namespace)
	if err != nil {
		return nil, err
	}
	for _, obj := range watched {
		out = append(out, Object{Phase: monitoringPhase, Object: obj})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Phase < out[j].Phase })
	return out, nil
}

// stripComments drops YAML comment lines, to tell an empty document from a real one.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
