package action

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// protobufOf encodes an option body as the generated clientset sends it.
func protobufOf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(optionsCodecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, optionsCodecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion).Encode(obj, &buf))
	return buf.Bytes()
}

func TestBodyDecode(t *testing.T) {
	stop := &v1.StopOptions{GracePeriod: ptr.To[int64](7), DryRun: []string{metav1.DryRunAll}}
	tests := []struct {
		name       string
		body       Body
		want       *v1.StopOptions
		badRequest bool
	}{
		{"no body", Body{}, &v1.StopOptions{}, false},
		{"JSON, as KubeVirt's clients send", Body{Data: []byte(`{"gracePeriod":7,"dryRun":["All"],"unknown":1}`), MediaType: "application/json"}, stop, false},
		{"YAML", Body{Data: []byte("gracePeriod: 7\ndryRun: [All]\n"), MediaType: "application/yaml"}, stop, false},
		{"protobuf, as the generated clientset sends", Body{Data: protobufOf(t, stop), MediaType: runtime.ContentTypeProtobuf}, stop, false},
		{"protobuf of another kind", Body{Data: protobufOf(t, &v1.StartOptions{Paused: true}), MediaType: runtime.ContentTypeProtobuf}, nil, true},
		{"not protobuf", Body{Data: []byte(`{"gracePeriod":7}`), MediaType: runtime.ContentTypeProtobuf}, nil, true},
		{"not JSON", Body{Data: []byte(`{"gracePeriod":`), MediaType: "application/json"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := &v1.StopOptions{}
			err := tc.body.Decode(got)
			if tc.badRequest {
				assert.True(t, apierrors.IsBadRequest(err), "want 400, got %v", err)
				return
			}
			require.NoError(t, err)
			got.TypeMeta = metav1.TypeMeta{}
			assert.Equal(t, tc.want, got)
		})
	}
}
