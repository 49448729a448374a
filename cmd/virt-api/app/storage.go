package app

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
)

// defaultStorageMediaType is how virt-api writes objects to etcd: protobuf, as kube-apiserver
// does for its own types. It is several times cheaper to encode and decode than JSON, and
// smaller. --storage-media-type=application/json writes JSON again (to read values with
// etcdctl, or before going back to a virt-api older than protobuf).
const defaultStorageMediaType = runtime.ContentTypeProtobuf

// applyStorageCodec makes the etcd codec write --storage-media-type, as kubevirt.io/v1
// whatever version a client used, and read every serializer the scheme knows: values written
// as JSON before the switch to protobuf (or after a switch back) stay readable, and are
// rewritten in the new form at their next update. k8s.io/apiserver's simple storage factory
// would otherwise ignore the flag and keep the codec NewRecommendedOptions was given.
func (o *Options) applyStorageCodec() error {
	etcd := o.RecommendedOptions.Etcd
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  etcd.DefaultStorageMediaType,
		StorageSerializer: apiserver.Codecs,
		StorageVersion:    v1.SchemeGroupVersion,
		MemoryVersion:     kubevirt.SchemeGroupVersion,
	})
	if err != nil {
		return fmt.Errorf("--storage-media-type: %w", err)
	}
	etcd.StorageConfig.Codec, etcd.StorageConfig.EncodeVersioner = codec, versioner
	return nil
}
