package integration

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const guestJSON = `"domain":{"resources":{"requests":{"memory":"64Mi"}},"devices":{}}`

// TestInvalidObjectsAreRejectedWithFieldPaths posts bad objects and checks the 422 names
// the offending field, and that nothing was stored.
func TestInvalidObjectsAreRejectedWithFieldPaths(t *testing.T) {
	ctx := context.Background()
	ns := "invalid"
	tests := []struct {
		name     string
		resource string
		body     string
		field    string
	}{
		{"running with runStrategy", "virtualmachines",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"both"},"spec":{"running":true,"runStrategy":"Always","template":{"spec":{` + guestJSON + `}}}}`,
			"spec.running"},
		{"unknown run strategy", "virtualmachines",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"strategy"},"spec":{"runStrategy":"Sometimes","template":{"spec":{` + guestJSON + `}}}}`,
			"spec.runStrategy"},
		{"no template", "virtualmachines",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"empty"},"spec":{"runStrategy":"Always"}}`,
			"spec.template"},
		{"disk naming no volume", "virtualmachineinstances",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"disk"},"spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}},"devices":{"disks":[{"name":"root"}]}}}}`,
			"spec.domain.devices.disks[0].name"},
		{"interface naming no network", "virtualmachineinstances",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"nic"},"spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}},"devices":{"interfaces":[{"name":"lan","bridge":{}}]}}}}`,
			"spec.domain.devices.interfaces[0].name"},
		{"duplicate volumes", "virtualmachineinstances",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"dup"},"spec":{` + guestJSON + `,"volumes":[{"name":"a","emptyDisk":{"capacity":"1Gi"}},{"name":"a","emptyDisk":{"capacity":"1Gi"}}]}}`,
			"spec.volumes[1].name"},
		{"no memory", "virtualmachineinstances",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"nomem"},"spec":{"domain":{"devices":{}}}}`,
			"spec.domain.memory.guest"},
		{"memory too small", "virtualmachineinstances",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"tiny"},"spec":{"domain":{"memory":{"guest":"1Ki"},"devices":{}}}}`,
			"spec.domain.memory.guest"},
		{"negative replicas", "virtualmachineinstancereplicasets",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceReplicaSet","metadata":{"name":"neg"},"spec":{"replicas":-1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{` + guestJSON + `}}}}`,
			"spec.replicas"},
		{"selector not matching template", "virtualmachineinstancereplicasets",
			`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceReplicaSet","metadata":{"name":"mismatch"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}},"spec":{` + guestJSON + `}}}}`,
			"spec.template.metadata.labels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := api.Client.KubevirtV1().RESTClient().Post().Namespace(ns).Resource(tc.resource).
				Body([]byte(tc.body)).Do(ctx).Error()
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
			status := err.(apierrors.APIStatus).Status()
			assert.Equal(t, int32(http.StatusUnprocessableEntity), status.Code)
			var fields []string
			for _, c := range status.Details.Causes {
				fields = append(fields, c.Field)
			}
			assert.Contains(t, fields, tc.field, "causes: %v", status.Details.Causes)

			list, err := api.Client.KubevirtV1().RESTClient().Get().Namespace(ns).Resource(tc.resource).DoRaw(ctx)
			require.NoError(t, err)
			assert.Contains(t, string(list), `"items":[]`, "nothing is stored")
		})
	}
}

func TestMalformedAndUnknownInput(t *testing.T) {
	ctx := context.Background()
	post := func(body, validation string) error {
		req := api.Client.KubevirtV1().RESTClient().Post().Namespace("malformed").Resource("virtualmachineinstances").Body([]byte(body))
		if validation != "" {
			req = req.Param("fieldValidation", validation)
		}
		return req.Do(ctx).Error()
	}
	err := post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"broken"`, "")
	assert.True(t, apierrors.IsBadRequest(err), "truncated JSON is a 400, got %v", err)

	err = post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"typo"},"spec":{`+guestJSON+`,"hostnme":"x"}}`, "Strict")
	require.Error(t, err)
	assert.True(t, apierrors.IsBadRequest(err), "an unknown field under strict validation is a 400, got %v", err)
	assert.Contains(t, err.Error(), `unknown field "spec.hostnme"`)

	err = post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"dupfield"},"spec":{`+guestJSON+`,"hostname":"a","hostname":"b"}}`, "Strict")
	assert.True(t, apierrors.IsBadRequest(err), "a duplicate field under strict validation is a 400, got %v", err)

	err = post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"wrongkind"},"spec":{}}`, "")
	assert.True(t, apierrors.IsBadRequest(err), "a VirtualMachine posted as an instance is a 400, got %v", err)

	err = post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"badtype"},"spec":{"domain":{"memory":{"guest":true}}}}`, "")
	assert.True(t, apierrors.IsBadRequest(err), "a wrongly typed value is a 400, got %v", err)

	list, err := api.Client.KubevirtV1().VirtualMachineInstances("malformed").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "nothing is stored")

	// Without strict validation an unknown field is dropped with a warning, as kube-apiserver does.
	require.NoError(t, post(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"lenient"},"spec":{`+guestJSON+`,"hostnme":"x"}}`, "Warn"))
}
