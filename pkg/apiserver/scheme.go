package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt/install"
)

var (
	// Scheme holds every type virt-api serves or stores.
	Scheme = runtime.NewScheme()
	// Codecs serializes the Scheme's types.
	Codecs = serializer.NewCodecFactory(Scheme)
	// Serializer is what virt-api speaks: Codecs without protobuf, which Hangar's types do not
	// implement. Clients that prefer protobuf but accept JSON, as kube-controller-manager's
	// namespace and garbage collectors do, get JSON instead of a 406.
	Serializer runtime.NegotiatedSerializer = withoutProtobuf{Codecs}
)

type withoutProtobuf struct {
	runtime.NegotiatedSerializer
}

func (s withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range s.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}

func init() {
	install.Install(Scheme)
	// The scale subresource speaks autoscaling/v1 Scale, through its internal form.
	utilruntime.Must(scalescheme.AddToScheme(Scheme))
	utilruntime.Must(scaleautoscalingv1.AddToScheme(Scheme))

	// Options (GetOptions, ListOptions, ...) and the unversioned discovery types.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}
