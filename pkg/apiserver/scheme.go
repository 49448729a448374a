package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	cloneinstall "github.com/hangarvm/hangar/pkg/apis/clone/install"
	exportinstall "github.com/hangarvm/hangar/pkg/apis/export/install"
	instancetypeinstall "github.com/hangarvm/hangar/pkg/apis/instancetype/install"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/install"
	snapshotinstall "github.com/hangarvm/hangar/pkg/apis/snapshot/install"
)

var (
	// Scheme holds every type virt-api serves or stores.
	Scheme = runtime.NewScheme()
	// Codecs serializes the Scheme's types: JSON, YAML, CBOR where enabled, and protobuf
	// (the kubevirt.io and instancetype.kubevirt.io types are generated for it).
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	instancetypeinstall.Install(Scheme)
	snapshotinstall.Install(Scheme)
	cloneinstall.Install(Scheme)
	exportinstall.Install(Scheme)
	// The scale subresource speaks autoscaling/v1 Scale, through its internal form.
	utilruntime.Must(scalescheme.AddToScheme(Scheme))
	utilruntime.Must(scaleautoscalingv1.AddToScheme(Scheme))

	// Options (GetOptions, ListOptions, ...) and the unversioned discovery types.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}
