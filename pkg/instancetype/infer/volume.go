package infer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// The objects behind a volume are read in the order KubeVirt's virt-api reads them, the first
// with the name label giving the name and kind:
//
//	persistentVolumeClaim: the claim.
//	dataVolume with a template in spec.dataVolumeTemplates: what the template's spec makes the
//	  DataVolume from (the template's own labels are not read, as KubeVirt's are not):
//	  source.pvc: that claim; source.snapshot: that VolumeSnapshot; sourceRef of kind
//	  DataSource: that DataSource (its namespace the VM's when unset).
//	dataVolume without a template: the DataVolume, then what its spec makes it from, as for a
//	  template. No DataVolume of the name: the claim of its name, as CDI may have removed a
//	  DataVolume whose claim stays.
//	a DataSource: the DataSource, then its spec.source.pvc claim, else its spec.source.snapshot
//	  VolumeSnapshot. A DataSource whose source is another DataSource is not followed (nor is
//	  it by KubeVirt).
//
// Objects of other namespaces (a DataSource of a namespace of boot images, and its claim) are
// read there: the Reader decides whether the user may.

// Kinds of objects read, as resources: the keys of inference.reads.
const (
	claimsResource      = "persistentvolumeclaims"
	snapshotsResource   = "volumesnapshots"
	dataVolumesResource = "datavolumes"
	dataSourcesResource = "datasources"
)

// ref is an object a volume leads to.
type ref struct{ namespace, name string }

// origin is what a DataVolume is made from, of the sources inference follows: a claim
// (spec.source.pvc), a VolumeSnapshot (spec.source.snapshot) or a DataSource (spec.sourceRef).
type origin struct {
	claim, snapshot, dataSource *ref
	// otherRef is the kind of a sourceRef that is no DataSource.
	otherRef string
}

// templateOrigin reads the spec of a template (Hangar's copy of CDI's types); namespace is
// the DataVolume's, which its sources default to.
func templateOrigin(spec *cdiv1beta1.DataVolumeSpec, namespace string) origin {
	var o origin
	if s := spec.Source; s != nil && s.PVC != nil {
		o.claim = &ref{orDefault(s.PVC.Namespace, namespace), s.PVC.Name}
	} else if s != nil && s.Snapshot != nil {
		o.snapshot = &ref{orDefault(s.Snapshot.Namespace, namespace), s.Snapshot.Name}
	}
	if r := spec.SourceRef; r != nil {
		o.dataSource, o.otherRef = sourceRef(r.Kind, r.Namespace, r.Name, namespace)
	}
	return o
}

// dataVolumeOrigin reads the spec of a DataVolume (CDI's types), as templateOrigin.
func dataVolumeOrigin(spec *cdi.DataVolumeSpec, namespace string) origin {
	var o origin
	if s := spec.Source; s != nil && s.PVC != nil {
		o.claim = &ref{orDefault(s.PVC.Namespace, namespace), s.PVC.Name}
	} else if s != nil && s.Snapshot != nil {
		o.snapshot = &ref{orDefault(s.Snapshot.Namespace, namespace), s.Snapshot.Name}
	}
	if r := spec.SourceRef; r != nil {
		o.dataSource, o.otherRef = sourceRef(r.Kind, r.Namespace, r.Name, namespace)
	}
	return o
}

func sourceRef(kind string, namespace *string, name, defaultNamespace string) (*ref, string) {
	if kind != cdiv1beta1.DataSourceKind {
		return nil, kind
	}
	ns := defaultNamespace
	if namespace != nil && *namespace != "" {
		ns = *namespace
	}
	return &ref{ns, name}, ""
}

func orDefault(namespace, defaultNamespace string) string {
	if namespace == "" {
		return defaultNamespace
	}
	return namespace
}

// fromVolume reads the name and kind w's labels give, from the objects behind volume.
func (in *inference) fromVolume(ctx context.Context, path *field.Path, w wanted, volume *kubevirt.Volume) (name, kind string, err error) {
	switch {
	case volume.PersistentVolumeClaim != nil:
		claim := volume.PersistentVolumeClaim.ClaimName
		return in.fromLabelled(ctx, path, w, claimsResource, ref{in.vm.Namespace, claim}, "the claim "+claim)
	case volume.DataVolume != nil:
		return in.fromDataVolume(ctx, path, w, volume.DataVolume.Name)
	}
	return "", "", nothingNamed(fmt.Sprintf("volume %s has no labels to infer from: only persistentVolumeClaim and dataVolume volumes have", w.volume))
}

func (in *inference) fromDataVolume(ctx context.Context, path *field.Path, w wanted, dataVolume string) (string, string, error) {
	ns := in.vm.Namespace
	for i := range in.vm.Spec.DataVolumeTemplates {
		if t := &in.vm.Spec.DataVolumeTemplates[i]; t.Name == dataVolume {
			// The template, whether or not its DataVolume exists yet: what a VM infers does
			// not change once virt-controller has made the DataVolume.
			return in.fromOrigin(ctx, path, w, templateOrigin(&t.Spec, ns), "the DataVolume template "+dataVolume, "")
		}
	}
	dv, err := readOnce(in, dataVolumesResource, ref{ns, dataVolume}, func() (*cdi.DataVolume, error) {
		return in.reader.DataVolume(ctx, path, ns, dataVolume)
	})
	switch {
	case apierrors.IsNotFound(err):
		// CDI removes DataVolumes once their claim is filled where its garbage collection is
		// on; the claim keeps the DataVolume's name (KubeVirt reads it too).
		labels, err := in.labels(ctx, path, claimsResource, ref{ns, dataVolume})
		switch {
		case apierrors.IsNotFound(err):
			return "", "", nothingNamed(fmt.Sprintf("neither the DataVolume %s of volume %s nor a claim of its name exists", dataVolume, w.volume))
		case err != nil:
			return "", "", err
		}
		return fromLabels(labels, w, fmt.Sprintf("the claim %s (there is no DataVolume %s)", dataVolume, dataVolume))
	case err != nil:
		return "", "", err
	}
	what := "the DataVolume " + dataVolume
	if name, kind, err := fromLabels(dv.Labels, w, what); err == nil {
		return name, kind, nil
	}
	return in.fromOrigin(ctx, path, w, dataVolumeOrigin(&dv.Spec, ns), what, " has no label "+w.nameLabel+" and")
}

// fromOrigin follows what a DataVolume (what, for messages) is made from. noLabel, when the
// DataVolume itself was read, says so in a message.
func (in *inference) fromOrigin(ctx context.Context, path *field.Path, w wanted, o origin, what, noLabel string) (string, string, error) {
	switch {
	case o.claim != nil:
		return in.fromLabelled(ctx, path, w, claimsResource, *o.claim, "the claim "+in.named(*o.claim)+" of "+what)
	case o.snapshot != nil:
		return in.fromLabelled(ctx, path, w, snapshotsResource, *o.snapshot, "the VolumeSnapshot "+in.named(*o.snapshot)+" of "+what)
	case o.dataSource != nil:
		return in.fromDataSource(ctx, path, w, *o.dataSource, "the DataSource "+in.named(*o.dataSource)+" of "+what)
	case o.otherRef != "":
		return "", "", nothingNamed(fmt.Sprintf("%s of volume %s%s has a sourceRef of kind %s: only a DataSource is read",
			what, w.volume, noLabel, o.otherRef))
	}
	return "", "", nothingNamed(fmt.Sprintf("%s of volume %s%s is made from no claim, VolumeSnapshot or DataSource to infer from",
		what, w.volume, noLabel))
}

func (in *inference) fromDataSource(ctx context.Context, path *field.Path, w wanted, r ref, what string) (string, string, error) {
	ds, err := readOnce(in, dataSourcesResource, r, func() (*cdi.DataSource, error) {
		return in.reader.DataSource(ctx, path, r.namespace, r.name)
	})
	switch {
	case apierrors.IsNotFound(err):
		return "", "", doesNotExist(what, w)
	case err != nil:
		return "", "", err
	}
	if name, kind, err := fromLabels(ds.Labels, w, what); err == nil {
		return name, kind, nil
	}
	// Followed as a DataVolume made from the DataSource's source would be.
	var o origin
	switch source := ds.Spec.Source; {
	case source.PVC != nil:
		o.claim = &ref{orDefault(source.PVC.Namespace, r.namespace), source.PVC.Name}
	case source.Snapshot != nil:
		o.snapshot = &ref{orDefault(source.Snapshot.Namespace, r.namespace), source.Snapshot.Name}
	default:
		return "", "", nothingNamed(fmt.Sprintf("%s of volume %s has no label %s and its source is no claim or VolumeSnapshot to infer from",
			what, w.volume, w.nameLabel))
	}
	return in.fromOrigin(ctx, path, w, o, what, "")
}

// fromLabelled reads w's labels of a claim or VolumeSnapshot, which lead nowhere further.
func (in *inference) fromLabelled(ctx context.Context, path *field.Path, w wanted, resource string, r ref, what string) (string, string, error) {
	labels, err := in.labels(ctx, path, resource, r)
	switch {
	case apierrors.IsNotFound(err):
		return "", "", doesNotExist(what, w)
	case err != nil:
		return "", "", err
	}
	return fromLabels(labels, w, what)
}

// labels reads the labels of a claim or VolumeSnapshot, once.
func (in *inference) labels(ctx context.Context, path *field.Path, resource string, r ref) (map[string]string, error) {
	return readOnce(in, resource, r, func() (map[string]string, error) {
		if resource == snapshotsResource {
			return in.reader.SnapshotLabels(ctx, path, r.namespace, r.name)
		}
		return in.reader.ClaimLabels(ctx, path, r.namespace, r.name)
	})
}

// doesNotExist is the error of a missing object. KubeVirt v1.6 refuses it under Ignore too.
// Hangar forgives it: virtctl create vm infers from every boot claim and DataVolume under
// Ignore, and a VM may be written before what it boots from.
func doesNotExist(what string, w wanted) error {
	return nothingNamed(fmt.Sprintf("%s of volume %s does not exist", what, w.volume))
}

// fromLabels reads w's labels of an object (described as what, for messages).
func fromLabels(labels map[string]string, w wanted, what string) (name, kind string, err error) {
	name = labels[w.nameLabel]
	if name == "" {
		return "", "", nothingNamed(fmt.Sprintf("%s of volume %s has no label %s", what, w.volume, w.nameLabel))
	}
	return name, labels[w.kindLabel], nil
}

// named is r for messages: its name, and its namespace when not the VM's.
func (in *inference) named(r ref) string {
	if r.namespace == in.vm.Namespace {
		return r.name
	}
	return r.namespace + "/" + r.name
}

// read is an object read, or found missing, once for both matchers.
type read struct {
	value any
	err   error
}

// readOnce returns what get returns, asking it once per object. Only objects and their absence
// are kept: any other error ends inference (a 403, a failed read) or is the one matcher's (a
// *field.Error, whose path is that matcher's).
func readOnce[T any](in *inference, resource string, r ref, get func() (T, error)) (T, error) {
	key := resource + " " + r.namespace + "/" + r.name
	if done, ok := in.reads[key]; ok {
		value, _ := done.value.(T)
		return value, done.err
	}
	value, err := get()
	if err == nil || apierrors.IsNotFound(err) {
		in.reads[key] = read{value: value, err: err}
	}
	return value, err
}
