package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
)

// mem is the memory every bound case gives its guest, so only the bound under test fails.
const mem = `"resources":{"requests":{"memory":"64Mi"}}`

// nic is an interface and its network, for the cases about them.
func nic(iface, network string) string {
	return `"domain":{` + mem + `,"devices":{"interfaces":[{"name":"default","masquerade":{}` + iface + `}]}},` +
		`"networks":[{"name":"default","pod":{` + network + `}}]`
}

// boundCases are one per bound or rule on what a user sets: the spec (of an instance, or of a
// template) and the field the 422 must name, relative to the spec.
var boundCases = []struct {
	name, spec, field string
}{
	{"vCPUs overflowing an int64 product", `"domain":{"cpu":{"cores":2097152,"sockets":2097152,"threads":2097152},` + mem + `,"devices":{}}`, "domain.cpu.cores"},
	{"more vCPUs than q35 takes", `"domain":{"cpu":{"cores":16,"sockets":16,"threads":2},` + mem + `,"devices":{}}`, "domain.cpu"},
	{"guest memory over 16Ti", `"domain":{"memory":{"guest":"17Ti"},"devices":{}}`, "domain.memory.guest"},
	{"a memory request of 1e30 bytes", `"domain":{"resources":{"requests":{"memory":"1e30"}},"devices":{}}`, "domain.resources.requests[memory]"},
	{"a CPU limit over 288", `"domain":{"resources":{"requests":{"memory":"64Mi"},"limits":{"cpu":"289"}},"devices":{}}`, "domain.resources.limits[cpu]"},
	{"an empty disk over 16Ti", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"scratch","emptyDisk":{"capacity":"17Ti"}}]`, "volumes[0].emptyDisk.capacity"},
	{"an empty disk of size zero", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"scratch","emptyDisk":{"capacity":"0"}}]`, "volumes[0].emptyDisk.capacity"},
	{"a grace period that overflows with the launcher's margin", `"domain":{` + mem + `,"devices":{}},"terminationGracePeriodSeconds":9223372036854775807`, "terminationGracePeriodSeconds"},
	{"a negative grace period", `"domain":{` + mem + `,"devices":{}},"terminationGracePeriodSeconds":-1`, "terminationGracePeriodSeconds"},
	{"a multicast MAC", nic(`,"macAddress":"01:00:5e:00:00:01"`, ""), "domain.devices.interfaces[0].macAddress"},
	{"the zero MAC", nic(`,"macAddress":"00:00:00:00:00:00"`, ""), "domain.devices.interfaces[0].macAddress"},
	{"a guest network with no room for a guest", nic("", `"vmNetworkCIDR":"10.0.2.0/31"`), "networks[0].pod.vmNetworkCIDR"},
	{"a loopback guest network", nic("", `"vmNetworkCIDR":"127.0.0.0/8"`), "networks[0].pod.vmNetworkCIDR"},
	{"a port out of range", nic(`,"ports":[{"port":65536}]`, ""), "domain.devices.interfaces[0].ports[0].port"},
	{"a NIC model QEMU 7.2 lacks", nic(`,"model":"igb"`, ""), "domain.devices.interfaces[0].model"},
	{"a boot order past QEMU's int32", `"domain":{` + mem + `,"devices":{"disks":[{"name":"scratch","bootOrder":2147483648}]}},"volumes":[{"name":"scratch","emptyDisk":{"capacity":"1Gi"}}]`,
		"domain.devices.disks[0].bootOrder"},
	{"a disk serial of 257 characters", `"domain":{` + mem + `,"devices":{"disks":[{"name":"scratch","serial":"` + strings.Repeat("s", 257) + `"}]}},"volumes":[{"name":"scratch","emptyDisk":{"capacity":"1Gi"}}]`,
		"domain.devices.disks[0].serial"},
	{"the i440fx machine", `"domain":{` + mem + `,"machine":{"type":"pc"},"devices":{}}`, "domain.machine.type"},
	{"a firmware UUID libvirt cannot read", `"domain":{` + mem + `,"firmware":{"uuid":"not-a-uuid"},"devices":{}}`, "domain.firmware.uuid"},
	{"a containerDisk whose init container name is no DNS label", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"` + strings.Repeat("v", 49) + `","containerDisk":{"image":"example/disk"}}]`,
		"volumes[0].name"},
	{"a claim named as a launcher pod volume", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"hangar-sockets","persistentVolumeClaim":{"claimName":"data"}}]`, "volumes[0].name"},
	{"a claim that would shadow /dev/kvm", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"kvm","persistentVolumeClaim":{"claimName":"data"}}]`, "volumes[0].name"},
	{"an image the kubelet cannot parse", `"domain":{` + mem + `,"devices":{}},"volumes":[{"name":"root","containerDisk":{"image":"Example/Disk"}}]`, "volumes[0].containerDisk.image"},
	{"a kernelBoot image with whitespace", `"domain":{` + mem + `,"firmware":{"kernelBoot":{"container":{"image":" k:1","kernelPath":"/vmlinuz"}}},"devices":{}}`,
		"domain.firmware.kernelBoot.container.image"},
	{"node affinity without terms", `"domain":{` + mem + `,"devices":{}},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}`,
		"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"},
	{"a priority class name the pod API refuses", `"domain":{` + mem + `,"devices":{}},"priorityClassName":"High_Priority"`, "priorityClassName"},
	{"a scheduler name the pod API refuses", `"domain":{` + mem + `,"devices":{}},"schedulerName":"my scheduler"`, "schedulerName"},
	{"a toleration value the pod API refuses", `"domain":{` + mem + `,"devices":{}},"tolerations":[{"key":"dedicated","value":"a b"}]`, "tolerations[0].value"},
}

// TestBoundsAreRefusedAtCreate posts every bound case as an instance, a VM and a replica set:
// each is a 422 naming the field at its path in that kind, and nothing is stored.
func TestBoundsAreRefusedAtCreate(t *testing.T) {
	ctx := context.Background()
	ns := "bounds"
	kinds := []struct {
		resource, prefix string
		body             func(name, spec string) string
	}{
		{"virtualmachineinstances", "spec.", func(name, spec string) string {
			return `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
		}},
		{"virtualmachines", "spec.template.spec.", func(name, spec string) string {
			return `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"` + name + `"},"spec":{"runStrategy":"Halted","template":{"spec":{` + spec + `}}}}`
		}},
		{"virtualmachineinstancereplicasets", "spec.template.spec.", func(name, spec string) string {
			return `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceReplicaSet","metadata":{"name":"` + name + `"},` +
				`"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{` + spec + `}}}}`
		}},
	}
	for i, tc := range boundCases {
		for _, kind := range kinds {
			t.Run(kind.resource+"/"+tc.name, func(t *testing.T) {
				name := fmt.Sprintf("bound-%d", i)
				client := api.Client.KubevirtV1().RESTClient()
				err := client.Post().Namespace(ns).Resource(kind.resource).Body([]byte(kind.body(name, tc.spec))).Do(ctx).Error()
				require.Error(t, err, "the object was accepted")
				require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
				status := err.(apierrors.APIStatus).Status()
				assert.Equal(t, int32(http.StatusUnprocessableEntity), status.Code)
				var fields []string
				for _, c := range status.Details.Causes {
					fields = append(fields, c.Field)
				}
				assert.Contains(t, fields, kind.prefix+tc.field, "causes: %v", status.Details.Causes)

				err = client.Get().Namespace(ns).Resource(kind.resource).Name(name).Do(ctx).Error()
				assert.True(t, apierrors.IsNotFound(err), "nothing is stored: %v", err)
			})
		}
	}
}

// TestQuantitiesTooCostlyToDecode: a quantity such as 1e-99999999 takes resource.ParseQuantity
// minutes; virt-api refuses the body before decoding it, in every form a client can send it
// (JSON, YAML, protobuf).
// A regression makes this test hang.
func TestQuantitiesTooCostlyToDecode(t *testing.T) {
	ctx := context.Background()
	client := api.Client.KubevirtV1().RESTClient()
	bodies := []struct{ contentType, body string }{
		{"application/json", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"slow"},"spec":{"domain":{"resources":{"requests":{"memory":"1e-99999999"}},"devices":{}}}}`},
		{"application/json", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"slow"},"spec":{"domain":{"memory":{"guest":1e-2147483647},"devices":{}}}}`},
		{"application/yaml", "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: slow\nspec:\n  domain:\n    resources:\n      requests:\n        memory: \"0." +
			strings.Repeat("0", 1000) + "1\"\n    devices: {}\n"},
	}
	// The clientset's protobuf form, with the quantity swapped for one of the same length so
	// that every length prefix stays right.
	vmi := newVMI("slow")
	vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("12345678901")
	var pb bytes.Buffer
	require.NoError(t, apiserver.Codecs.EncoderForVersion(protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme), v1.SchemeGroupVersion).Encode(vmi, &pb))
	bodies = append(bodies, struct{ contentType, body string }{runtime.ContentTypeProtobuf,
		strings.Replace(pb.String(), "12345678901", "1e-99999999", 1)})
	for _, b := range bodies {
		err := client.Post().Namespace("slow").Resource("virtualmachineinstances").SetHeader("Content-Type", b.contentType).
			Body([]byte(b.body)).Do(ctx).Error()
		require.Error(t, err)
		assert.True(t, apierrors.IsBadRequest(err), "want 400, got %v", err)
		assert.Contains(t, err.Error(), "too long to decode")
	}
	// A patch of an existing instance is looked at too.
	_, err := api.Client.KubevirtV1().VirtualMachineInstances("slow").Create(ctx, newVMI("patched"), metav1.CreateOptions{})
	require.NoError(t, err)
	err = client.Patch(types.MergePatchType).Namespace("slow").Resource("virtualmachineinstances").Name("patched").
		Body([]byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"domain":{"memory":{"guest":"1e-99999999"}}}}`)).Do(ctx).Error()
	assert.True(t, apierrors.IsBadRequest(err), "want 400, got %v", err)
}
