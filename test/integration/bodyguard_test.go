package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// guardBound is how long virt-api may take to answer a body holding a quantity too costly
// to decode, in whatever form it comes: the answer comes from the guard in front of the
// decoder, or from the server's refusal of the type before it reads the body. Unguarded,
// the same bodies run for minutes (and end in the aggregator's 504 after 34 s).
const guardBound = 100 * time.Millisecond

// guardVariant is one way of sending a costly quantity to virt-api.
type guardVariant struct {
	name, method, contentType string
	// subresource is appended to the instance's path ("" for the instance itself); create
	// posts to the collection; action puts to the start action of the VM of the same name.
	subresource string
	create      bool
	action      bool
	// query is added to the URL.
	query string
	body  []byte
	// code is the answer: 400 from the guard, 415 from a refusal of the type.
	code int
}

// guardVariants are the ways the guard was walked around, and every type the decoder takes.
func guardVariants(t *testing.T, name string) []guardVariant {
	instance := func(memory string) []byte {
		return []byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"` + name +
			`"},"spec":{"domain":{"memory":{"guest":"` + memory + `"},"devices":{}}}}`)
	}
	costly := instance("1e-100000000")
	actionBody := []byte("apiVersion: subresources.kubevirt.io/v1\nkind: StartOptions\nextra: \"1e-100000000\"\n")
	patch := []byte(`{"spec":{"domain":{"memory":{"guest":"1e-100000000"}}}}`)
	yamlBody := []byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: " + name +
		"\nspec:\n  domain:\n    memory:\n      guest: \"1e-100000000\"\n    devices: {}\n")
	return []guardVariant{
		// The walk-arounds seen: a patch type with a parameter mime cannot parse (the patch
		// handler cuts at ';' and decodes), a write with no Content-Type (decoded as JSON).
		{name: "merge patch with a bare parameter", method: "PATCH", contentType: "application/merge-patch+json; x", body: patch, code: 400},
		{name: "merge patch with a trailing semicolon", method: "PATCH", contentType: "application/merge-patch+json;", body: patch, code: 400},
		{name: "strategic merge patch with a charset", method: "PATCH", contentType: "application/strategic-merge-patch+json; charset=utf-8", body: patch, code: 400},
		{name: "JSON patch with a bare parameter", method: "PATCH", contentType: "application/json-patch+json; x",
			body: []byte(`[{"op":"replace","path":"/spec/domain/memory","value":{"guest":"1e-100000000"}}]`), code: 400},
		{name: "apply patch with a bare parameter", method: "PATCH", contentType: "application/apply-patch+yaml; x", query: "fieldManager=t",
			body: yamlBody, code: 400},
		{name: "create without Content-Type", method: "POST", create: true, body: costly, code: 400},
		{name: "update without Content-Type", method: "PUT", body: costly, code: 400},
		{name: "status update without Content-Type", method: "PUT", subresource: "status", body: costly, code: 400},
		{name: "create as Application/JSON", method: "POST", contentType: "Application/JSON", create: true, body: costly, code: 400},
		{name: "create as JSON with a charset", method: "POST", contentType: "application/json; charset=utf-8", create: true, body: costly, code: 400},
		{name: "create as YAML", method: "POST", contentType: "application/yaml", create: true, body: yamlBody, code: 400},
		{name: "create as protobuf", method: "POST", contentType: runtime.ContentTypeProtobuf, create: true, body: costlyProtobuf(t, name), code: 400},
		// An action reads its body as YAML whatever the type says.
		{name: "an action's body of a type mime cannot parse", method: "PUT", contentType: "application/json; x", action: true, body: actionBody, code: 400},
		{name: "an action's body as text/plain", method: "PUT", contentType: "text/plain", action: true, body: actionBody, code: 400},
		{name: "an action's body without Content-Type", method: "PUT", action: true, body: actionBody, code: 400},
		// Types the server refuses before reading the body (and the guard leaves unread).
		{name: "create as a type mime cannot parse", method: "POST", contentType: "application/json; x", create: true, body: costly, code: 415},
		{name: "create as text/plain", method: "POST", contentType: "text/plain", create: true, body: costly, code: 415},
		{name: "patch of no patch type", method: "PATCH", contentType: "application/json", body: patch, code: 415},
		{name: "patch type in capitals", method: "PATCH", contentType: "Application/Merge-Patch+JSON", body: patch, code: 415},
		{name: "CBOR apply patch", method: "PATCH", contentType: "application/apply-patch+cbor", query: "fieldManager=t", body: []byte{0xa0}, code: 415},
	}
}

// costlyProtobuf is an instance as the generated clientset encodes it, its guest memory swapped
// for 1e-100000000 (of the same length as the stand-in, so every length prefix stays right).
func costlyProtobuf(t *testing.T, name string) []byte {
	const stand = "123456789012"
	vmi := newVMI(name)
	vmi.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"}
	vmi.Spec.Domain.Memory = &v1.Memory{Guest: ptrQuantity(stand)}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme).Encode(vmi, &buf))
	require.Contains(t, buf.String(), stand)
	return bytes.ReplaceAll(buf.Bytes(), []byte(stand), []byte("1e-100000000"))
}

// checkGuardVariants sends every variant to the server behind cfg (virt-api itself, or
// kube-apiserver in front of it) against a stored instance, and requires each to be answered
// with its code within guardBound (the best of three tries, so that a scheduling hiccup of
// the test machine does not count) and the instance to stay as it was.
// A user who may not write status (an editor) skips that variant: authorization answers first.
func checkGuardVariants(t *testing.T, cfg *rest.Config, client versioned.Interface, ns string, writesStatus bool) {
	ctx := context.Background()
	const name = "guarded"
	vmi, err := client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI(name), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM(name, v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	collection := fmt.Sprintf("%s/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstances", strings.TrimSuffix(cfg.Host, "/"), ns)

	for _, v := range guardVariants(t, name) {
		if v.subresource == "status" && !writesStatus {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			url := collection + "/" + name
			if v.create {
				url = collection
			} else if v.action {
				url = strings.Replace(collection, "virtualmachineinstances", "virtualmachines", 1) + "/" + name + "/start"
			} else if v.subresource != "" {
				url += "/" + v.subresource
			}
			if v.query != "" {
				url += "?" + v.query
			}
			body := v.body
			if v.method == "PUT" {
				// An update carries the stored resourceVersion, so only the guard can refuse it.
				body = bytes.Replace(body, []byte(`"name":"`+name+`"`), []byte(`"name":"`+name+`","resourceVersion":"`+vmi.ResourceVersion+`"`), 1)
			}
			best := time.Hour
			for try := 0; try < 3 && best > guardBound; try++ {
				req, err := http.NewRequestWithContext(ctx, v.method, url, bytes.NewReader(body))
				require.NoError(t, err)
				if v.contentType != "" {
					req.Header.Set("Content-Type", v.contentType)
				}
				start := time.Now()
				resp, err := httpClient.Do(req)
				require.NoError(t, err)
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				best = min(best, took)
				var status metav1.Status
				require.NoError(t, json.Unmarshal(answer, &status), "%s", answer)
				require.Equal(t, v.code, resp.StatusCode, "%s", answer)
				assert.Equal(t, int32(v.code), status.Code)
				if v.code == http.StatusBadRequest {
					assert.Contains(t, status.Message, "too long to decode")
				}
				if resp.StatusCode == http.StatusUnsupportedMediaType {
					return // refused unread: the same at once
				}
			}
			assert.Less(t, best, guardBound, "answered in %v", best)
		})
	}
	got, err := client.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, vmi.ResourceVersion, got.ResourceVersion, "nothing was written")
	assert.Equal(t, resource.MustParse("128Mi"), got.Spec.Domain.Resources.Requests[corev1.ResourceMemory])
}

// TestBodyGuardReadsAsTheServerDoes: every way of sending a quantity too costly to decode is
// refused within guardBound, whatever the Content-Type says or leaves out.
func TestBodyGuardReadsAsTheServerDoes(t *testing.T) {
	checkGuardVariants(t, api.Config, api.Client, "bodyguard", true)
}
