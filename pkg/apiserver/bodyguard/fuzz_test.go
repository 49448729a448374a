package bodyguard_test

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"sigs.k8s.io/yaml"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
	"github.com/hangarvm/hangar/pkg/apiserver/bodyguard"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// decodeBound is far above what any body the guard lets through takes to decode (well under
// a millisecond at the fuzzer's sizes) and far below what a costly quantity takes (1e-99999999:
// about 100 s).
const decodeBound = 2 * time.Second

// FuzzGuard holds the guard to its promise: a write it lets through decodes quickly in the
// reading virt-api gives it. For each method, Content-Type, target (a resource, or an action
// that reads its body itself) and body, the fuzzer asks the guard as virt-api's handler chain
// does; for a body let through, it reads the body as virt-api's handlers would (the server's
// negotiation for creates and updates, the patch handler's type and patch mechanics on a
// stored instance, an action's YAML), decoding into a VirtualMachineInstance, whose
// quantities are parsed on the way (an action's options have none: the stronger test), and
// fails when that takes longer than decodeBound.
func FuzzGuard(f *testing.F) {
	const costly = `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","spec":{"domain":{"memory":{"guest":"1e-99999999"}}}}`
	for _, seed := range []struct {
		method      uint8
		contentType string
		body        string
	}{
		{0, "application/json", costly},
		{0, "", costly},
		{1, "", costly},
		{0, "application/json; x", costly},
		{0, "Application/YAML", "spec:\n  domain:\n    memory:\n      guest: \"1e-99999999\"\n"},
		{1, "text/plain", costly},
		{2, "application/merge-patch+json; x", costly},
		{2, "application/merge-patch+json;", `{"spec":{"domain":{"memory":{"guest":1e-99999999}}}}`},
		{2, "application/strategic-merge-patch+json; charset=utf-8", costly},
		{2, "application/json-patch+json; x", `[{"op":"add","path":"/spec/domain/memory","value":{"guest":"1e-99999999"}}]`},
		{2, "application/apply-patch+yaml; x", "spec: {domain: {memory: {guest: '1e-99999999'}}}"},
		{0, runtime.ContentTypeProtobuf, string(protobufWith(f, "12345678901", "1e-99999999"))},
		{0, runtime.ContentTypeProtobuf, string(protobufWith(f, "12345678901", "12345678901"))},
	} {
		f.Add(seed.method, seed.contentType, false, []byte(seed.body))
		f.Add(seed.method, seed.contentType, true, []byte(seed.body))
	}
	guard := bodyguard.New(apiserver.Codecs, 0)
	f.Fuzz(func(t *testing.T, m uint8, contentType string, action bool, body []byte) {
		method := []string{http.MethodPost, http.MethodPut, http.MethodPatch}[int(m)%3]
		if guard.Check(method, contentType, action, body) != nil {
			return
		}
		start := time.Now()
		readAsServer(method, contentType, action, body)
		if took := time.Since(start); took > decodeBound {
			t.Fatalf("%s with Content-Type %q: the guard let through a body that took %v to decode: %q", method, contentType, took, body)
		}
	})
}

// readAsServer decodes a body in the reading virt-api's handlers give it; errors do not
// matter (the server answers them with a 4xx), only the time spent.
func readAsServer(method, contentType string, rawBody bool, body []byte) {
	decodeVMI := func(serializer runtime.Serializer, data []byte) {
		gvk := v1.SchemeGroupVersion.WithKind("VirtualMachineInstance")
		_, _, _ = apiserver.Codecs.DecoderToVersion(serializer, kubevirt.SchemeGroupVersion).Decode(data, &gvk, nil)
	}
	info := func(media string) runtime.Serializer {
		i, _ := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), media)
		return i.Serializer
	}
	if method == http.MethodPatch {
		patchType := contentType
		if i := strings.Index(patchType, ";"); i > 0 {
			patchType = patchType[:i]
		}
		base := storedVMI()
		var patched []byte
		switch types.PatchType(patchType) {
		case types.MergePatchType:
			patched, _ = jsonpatch.MergePatch(base, body)
		case types.JSONPatchType:
			if p, err := jsonpatch.DecodePatch(body); err == nil {
				patched, _ = p.Apply(base)
			}
		case types.StrategicMergePatchType:
			patched, _ = strategicpatch.StrategicMergePatch(base, body, &v1.VirtualMachineInstance{})
		case types.ApplyYAMLPatchType:
			patched, _ = yaml.YAMLToJSON(body)
		}
		if patched != nil {
			decodeVMI(info(runtime.ContentTypeJSON), patched)
		}
		return
	}
	if rawBody {
		// An action: protobuf when the type says so, else YAML, within its limit.
		if len(body) > action.MaxBodyBytes {
			return
		}
		if media, _, err := mime.ParseMediaType(contentType); err == nil && media == runtime.ContentTypeProtobuf {
			decodeVMI(info(runtime.ContentTypeProtobuf), body)
		} else if converted, err := yaml.YAMLToJSON(body); err == nil {
			decodeVMI(info(runtime.ContentTypeJSON), converted)
		}
		return
	}
	if negotiated, err := negotiation.NegotiateInputSerializerForMediaType(contentType, false, apiserver.Codecs); err == nil {
		decodeVMI(negotiated.Serializer, body)
	}
}

// storedVMI is the instance a patch applies to.
func storedVMI() []byte {
	b, _ := yaml.Marshal(map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec":     map[string]any{"domain": map[string]any{"memory": map[string]any{"guest": "64Mi"}, "devices": map[string]any{}}},
	})
	j, _ := yaml.YAMLToJSON(b)
	return j
}

// protobufWith encodes an instance as the generated clientset does, its memory request
// spelled stand, then swapped for a quantity of the same length.
func protobufWith(f *testing.F, stand, swapped string) []byte {
	vmi := &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(stand)}},
		}},
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme).Encode(vmi, &buf); err != nil {
		f.Fatal(err)
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte(stand), []byte(swapped))
}
