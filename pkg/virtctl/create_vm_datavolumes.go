package virtctl

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// The DataVolume volumes of `create vm`, as KubeVirt's virtctl writes them: each flag adds a
// DataVolume template (CDI's spec, the storage API) and a dataVolume volume of the same name.
//
//	--volume-datasource=src:[NAMESPACE/]NAME[,name:NAME][,size:SIZE][,storageclass:CLASS][,bootorder:N]
//	--volume-clone-pvc=src:NAMESPACE/NAME[,name:...][,size:...][,storageclass:...][,bootorder:N]
//	--volume-blank=size:SIZE[,name:...][,storageclass:...][,bootorder:N]
//	--volume-import=type:ds|pvc|snapshot|blank|http|registry|s3|gcs[,src:...|url:...][,size:...][,name:...][,storageclass:...][,bootorder:N]

// dataVolumeParams are the params every DataVolume flag takes besides its source.
var dataVolumeParams = []string{"name", "size", "storageclass", "bootorder"}

func (b *vmVolumes) addDataVolumeSource(value string) error {
	p, err := parseParams("volume-datasource", value, append([]string{"src"}, dataVolumeParams...)...)
	if err != nil {
		return err
	}
	ns, name, err := requiredRef(p, false)
	if err != nil {
		return err
	}
	return b.addDataVolume(p, fmt.Sprintf("%s-ds-%s", b.vm.Name, name), cdiv1beta1.DataVolumeSpec{SourceRef: dataSourceRef(ns, name)}, false)
}

func (b *vmVolumes) addClonePVC(value string) error {
	p, err := parseParams("volume-clone-pvc", value, append([]string{"src"}, dataVolumeParams...)...)
	if err != nil {
		return err
	}
	ns, name, err := requiredRef(p, true)
	if err != nil {
		return err
	}
	return b.addDataVolume(p, fmt.Sprintf("%s-pvc-%s", b.vm.Name, name),
		cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{PVC: &cdiv1beta1.DataVolumeSourcePVC{Namespace: ns, Name: name}}}, false)
}

func (b *vmVolumes) addBlank(value string, index int) error {
	p, err := parseParams("volume-blank", value, dataVolumeParams...)
	if err != nil {
		return err
	}
	return b.addDataVolume(p, fmt.Sprintf("%s-blank-%d", b.vm.Name, index),
		cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{Blank: &cdiv1beta1.DataVolumeBlankImage{}}}, true)
}

// importTypes are --volume-import's types, by the param that names their source.
var importTypes = map[string]string{"ds": "src", "pvc": "src", "snapshot": "src", "blank": "",
	"http": "url", "registry": "url", "s3": "url", "gcs": "url"}

func (b *vmVolumes) addImport(value string) error {
	p, err := parseParams("volume-import", value, append([]string{"type", "src", "url"}, dataVolumeParams...)...)
	if err != nil {
		return err
	}
	typ, err := p.required("type")
	if err != nil {
		return err
	}
	srcParam, ok := importTypes[typ]
	if !ok {
		return p.errorf("unknown type %q, want ds, pvc, snapshot, blank, http, registry, s3 or gcs", typ)
	}
	for _, other := range []string{"src", "url"} {
		if _, given := p.values[other]; given && other != srcParam {
			return p.errorf("type %s takes no %s", typ, other)
		}
	}
	name := "imported-volume-" + rand.String(5)
	var spec cdiv1beta1.DataVolumeSpec
	sized := false // the type needs a size: nothing to take it from
	switch typ {
	case "ds":
		ns, n, err := requiredRef(p, false)
		if err != nil {
			return err
		}
		spec.SourceRef = dataSourceRef(ns, n)
	case "pvc", "snapshot":
		ns, n, err := requiredRef(p, true)
		if err != nil {
			return err
		}
		if typ == "pvc" {
			spec.Source = &cdiv1beta1.DataVolumeSource{PVC: &cdiv1beta1.DataVolumeSourcePVC{Namespace: ns, Name: n}}
		} else {
			spec.Source = &cdiv1beta1.DataVolumeSource{Snapshot: &cdiv1beta1.DataVolumeSourceSnapshot{Namespace: ns, Name: n}}
		}
	case "blank":
		spec.Source, sized = &cdiv1beta1.DataVolumeSource{Blank: &cdiv1beta1.DataVolumeBlankImage{}}, true
	default:
		url, err := p.required("url")
		if err != nil {
			return err
		}
		sized = true
		switch typ {
		case "http":
			spec.Source = &cdiv1beta1.DataVolumeSource{HTTP: &cdiv1beta1.DataVolumeSourceHTTP{URL: url}}
		case "registry":
			spec.Source = &cdiv1beta1.DataVolumeSource{Registry: &cdiv1beta1.DataVolumeSourceRegistry{URL: &url}}
		case "s3":
			spec.Source = &cdiv1beta1.DataVolumeSource{S3: &cdiv1beta1.DataVolumeSourceS3{URL: url}}
		case "gcs":
			spec.Source = &cdiv1beta1.DataVolumeSource{GCS: &cdiv1beta1.DataVolumeSourceGCS{URL: url}}
		}
	}
	return b.addDataVolume(p, name, spec, sized)
}

// requiredRef is the src param, NAMESPACE/NAME; the namespace is required for a clone (CDI
// clones across namespaces), optional for a DataSource (the VM's then).
func requiredRef(p params, namespaced bool) (namespace, name string, err error) {
	src, err := p.required("src")
	if err != nil {
		return "", "", err
	}
	namespace, name, err = splitPrefixed(src)
	switch {
	case err != nil:
		return "", "", p.errorf("src: %v", err)
	case namespaced && namespace == "":
		return "", "", p.errorf("src: want NAMESPACE/NAME")
	}
	return namespace, name, nil
}

func dataSourceRef(namespace, name string) *cdiv1beta1.DataVolumeSourceRef {
	ref := &cdiv1beta1.DataVolumeSourceRef{Kind: cdiv1beta1.DataSourceKind, Name: name}
	if namespace != "" {
		ref.Namespace = &namespace
	}
	return ref
}

// addDataVolume adds the template of spec and its volume, named by the name param or
// defaultName; sized says the size param is required.
func (b *vmVolumes) addDataVolume(p params, defaultName string, spec cdiv1beta1.DataVolumeSpec, sized bool) error {
	name := p.values["name"]
	if name == "" {
		name = defaultName
	}
	spec.Storage = &cdiv1beta1.StorageSpec{}
	if size, ok := p.values["size"]; ok || sized {
		q, err := apiresource.ParseQuantity(size)
		if err != nil || q.Sign() <= 0 {
			return p.errorf("size: want a positive quantity such as 10Gi")
		}
		spec.Storage.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: q}
	}
	if class := p.values["storageclass"]; class != "" {
		spec.Storage.StorageClassName = &class
	}
	order, err := p.bootOrder()
	if err != nil {
		return err
	}
	if err := b.add(p, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: name}}}, order); err != nil {
		return err
	}
	b.vm.Spec.DataVolumeTemplates = append(b.vm.Spec.DataVolumeTemplates, v1.DataVolumeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	return nil
}
