package bodyguard

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// stand is a quantity of the same length as 1e-99999999: swapping one for the other in an
// encoded body keeps every length prefix right, so the body is what a client could send.
const stand, costly = "12345678901", "1e-99999999"

// encodeProtobuf encodes obj as the generated clientset does.
func encodeProtobuf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1.AddToScheme(scheme))
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme, scheme).Encode(obj, &buf))
	return buf.Bytes()
}

func vmiWith(mutate func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x"}},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}},
	}
	mutate(vmi)
	return vmi
}

// message nests fields by hand: each argument is a field number and its bytes.
func message(fields ...any) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		b = protowire.AppendTag(b, protowire.Number(fields[i].(int)), protowire.BytesType)
		b = protowire.AppendBytes(b, fields[i+1].([]byte))
	}
	return b
}

func TestCheckProtobuf(t *testing.T) {
	const pb = runtime.ContentTypeProtobuf
	swap := func(body []byte) []byte {
		require.Contains(t, string(body), stand)
		return bytes.ReplaceAll(body, []byte(stand), []byte(costly))
	}
	q := resource.MustParse(stand)
	tests := []struct {
		name string
		body []byte
		bad  bool
	}{
		{"a fine instance", encodeProtobuf(t, vmiWith(func(*v1.VirtualMachineInstance) {})), false},
		{"a request", swap(encodeProtobuf(t, vmiWith(func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = q
		}))), true},
		{"memory.guest", swap(encodeProtobuf(t, vmiWith(func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Memory = &v1.Memory{Guest: &q}
		}))), true},
		{"an emptyDisk in a VM's template", swap(encodeProtobuf(t, &v1.VirtualMachine{
			TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
			Spec: v1.VirtualMachineSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				Volumes: []v1.Volume{{Name: "a"}, {Name: "b", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: q}}}}}}},
		})), true},
		{"a replica set's limits", swap(encodeProtobuf(t, &v1.VirtualMachineInstanceReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceReplicaSet"},
			Spec: v1.VirtualMachineInstanceReplicaSetSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/x": q}}}}}},
		})), true},
		{"text that holds one is no quantity", encodeProtobuf(t, vmiWith(func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Volumes = []v1.Volume{{Name: "c", VolumeSource: v1.VolumeSource{
				CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config\nx: " + costly + "\n"}}}}
		})), false},
		{"a million-digit mantissa", append([]byte("k8s\x00"), message(2, message(2, message(1, message(1,
			message(1, message(1, []byte("memory"), 2, message(1, bytes.Repeat([]byte("1"), 1<<20))))))))...), true},
		{"no magic", swap(encodeProtobuf(t, vmiWith(func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = q
		})))[4:], false},
		{"not protobuf after the magic", []byte("k8s\x00\xff\xff\xff"), false},
		{"deeper than anything is decoded", func() []byte {
			// Field 2: the tag and length of field 1 here (\n, \v) are white space, which
			// Problem trims, so the innermost message itself would look like the quantity.
			b := message(2, []byte(costly))
			for i := 0; i < maxProtobufDepth+1; i++ {
				b = message(1, b)
			}
			return append([]byte("k8s\x00"), b...)
		}(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(codecs, 0).Check(http.MethodPost, pb, false, tc.body)
			assert.Equal(t, tc.bad, r != nil, "%+v", r)
		})
	}
}

// The generated decoder really parses what the guard refuses: a swapped body is a valid
// instance whose request is the swapped-in quantity, parsed while decoding (here a cheap one,
// 1e-00000009).
func TestProtobufQuantityIsParsedOnDecode(t *testing.T) {
	q := resource.MustParse(stand)
	body := encodeProtobuf(t, vmiWith(func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = q }))
	body = bytes.ReplaceAll(body, []byte(stand), []byte("1e-00000009"))
	scheme := runtime.NewScheme()
	require.NoError(t, v1.AddToScheme(scheme))
	obj, _, err := protobuf.NewSerializer(scheme, scheme).Decode(body, nil, nil)
	require.NoError(t, err)
	got := obj.(*v1.VirtualMachineInstance).Spec.Domain.Resources.Requests[corev1.ResourceMemory]
	assert.Zero(t, got.Cmp(resource.MustParse("1n")), "ParseQuantity ran while decoding: %s", got.String())
}
