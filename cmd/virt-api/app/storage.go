package app

import (
	"fmt"
	"mime"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/export"
	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/apiserver"
)

// defaultStorageMediaType is how virt-api writes objects to etcd: protobuf, as kube-apiserver
// does for its own types. It is several times cheaper to encode and decode than JSON, and
// smaller. --storage-media-type=application/json writes JSON again (to read values with
// etcdctl, or before going back to a virt-api older than protobuf).
const defaultStorageMediaType = runtime.ContentTypeProtobuf

// Each group is stored in one version whatever version a client used, and held in memory in
// its internal version.
var (
	storageVersions = schema.GroupVersions{v1.SchemeGroupVersion, instancetypev1beta1.SchemeGroupVersion, snapshotv1beta1.SchemeGroupVersion, clonev1beta1.SchemeGroupVersion, exportv1beta1.SchemeGroupVersion}
	memoryVersions  = schema.GroupVersions{kubevirt.SchemeGroupVersion, instancetype.SchemeGroupVersion, snapshot.SchemeGroupVersion, clone.SchemeGroupVersion, export.SchemeGroupVersion}
)

// applyStorageCodec makes the etcd codec write --storage-media-type, each group in its storage
// version (kubevirt.io/v1, instancetype.kubevirt.io/v1beta1), and read every serializer the
// scheme knows: values written as JSON before the switch to protobuf (or after a switch back)
// stay readable, and are rewritten in the new form at their next update. k8s.io/apiserver's
// simple storage factory would otherwise ignore the flag and keep the codec
// NewRecommendedOptions was given; its storage codec (serverstorage.NewStorageCodec) knows one
// group only, and virt-api stores two through the same etcd options.
func (o *Options) applyStorageCodec() error {
	etcd := o.RecommendedOptions.Etcd
	codec, err := storageCodec(etcd.DefaultStorageMediaType)
	if err != nil {
		return fmt.Errorf("--storage-media-type: %w", err)
	}
	etcd.StorageConfig.Codec, etcd.StorageConfig.EncodeVersioner = codec, storageVersions
	return nil
}

// storageCodec encodes in mediaType and decodes any serialization the scheme knows.
func storageCodec(mediaType string) (runtime.Codec, error) {
	mediaType, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid media type", mediaType)
	}
	codecs := apiserver.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, fmt.Errorf("no serializer for %q", mediaType)
	}
	encoder := codecs.EncoderForVersion(info.Serializer, storageVersions)
	decoder := codecs.DecoderToVersion(recognizer.NewDecoder(info.Serializer, codecs.UniversalDeserializer()), memoryVersions)
	return runtime.NewCodec(encoder, decoder), nil
}
