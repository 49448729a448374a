package openapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestShapeV2LikeKubeVirt(t *testing.T) {
	query := func(name string) spec.Parameter {
		return spec.Parameter{ParamProps: spec.ParamProps{Name: name, In: "query"}}
	}
	body := spec.Parameter{ParamProps: spec.ParamProps{Name: "body", In: "body"}}
	namespace := spec.Parameter{ParamProps: spec.ParamProps{Name: "namespace", In: "path"}}
	op := func(action string, params ...spec.Parameter) *spec.Operation {
		o := &spec.Operation{OperationProps: spec.OperationProps{Consumes: []string{"*/*"}, Parameters: params}}
		o.AddExtension("x-kubernetes-action", action)
		return o
	}
	item := func() spec.PathItem {
		return spec.PathItem{PathItemProps: spec.PathItemProps{
			Parameters: []spec.Parameter{namespace, {Refable: spec.Refable{Ref: spec.MustCreateRef("#/parameters/pretty-abc")}}},
			Get:        op("get"),
			Post:       op("post", body, query("dryRun"), query("fieldManager")),
			Put:        op("put", body, query("dryRun")),
			Patch:      op("patch", body, query("force")),
			Delete:     op("delete", body, query("gracePeriodSeconds")),
		}}
	}
	const (
		kubevirt     = "/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}"
		instancetype = "/apis/instancetype.kubevirt.io/v1beta1/namespaces/{namespace}/virtualmachineinstancetypes/{name}"
		other        = "/apis/hangarvm.io/v1alpha1/hangars/{name}"
	)
	doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Parameters: map[string]spec.Parameter{"pretty-abc": query("pretty")},
		Paths: &spec.Paths{Paths: map[string]spec.PathItem{
			kubevirt: item(), instancetype: item(), other: item(),
		}},
	}}
	doc, err := ShapeV2LikeKubeVirt(doc)
	require.NoError(t, err)

	names := func(params []spec.Parameter) []string {
		var out []string
		for _, p := range params {
			name := p.Name
			if name == "" {
				name = p.Ref.String()
			}
			out = append(out, name)
		}
		return out
	}
	for _, path := range []string{kubevirt, instancetype} {
		shaped := doc.Paths.Paths[path]
		assert.Equal(t, []string{"namespace"}, names(shaped.Parameters), "%s: the path keeps its path parameters only", path)
		assert.Equal(t, []string{"#/parameters/pretty-abc"}, names(shaped.Get.Parameters), "%s: a read keeps pretty", path)
		assert.Equal(t, []string{"body"}, names(shaped.Post.Parameters), "%s: a create takes no query", path)
		assert.Equal(t, []string{"body"}, names(shaped.Put.Parameters), "%s: a replace takes no query", path)
		assert.Equal(t, []string{"body"}, names(shaped.Patch.Parameters), "%s: a patch takes no query", path)
		assert.Equal(t, []string{"#/parameters/pretty-abc", "body", "gracePeriodSeconds"}, names(shaped.Delete.Parameters), path)
		for _, o := range []*spec.Operation{shaped.Post, shaped.Put, shaped.Delete} {
			assert.Equal(t, []string{"application/json", "application/yaml"}, o.Consumes, path)
		}
		assert.Equal(t, []string{"*/*"}, shaped.Patch.Consumes, "%s: a patch keeps its patch types", path)
	}
	untouched := item()
	assert.Equal(t, untouched, doc.Paths.Paths[other], "a group not KubeVirt's keeps Kubernetes' shape")
}
