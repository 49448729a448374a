package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

const protobufMagic = "k8s\x00"

// TestProtobufOnTheWire: the generated clientset speaks protobuf (it prefers it); a client
// asking for JSON gets exactly the JSON it got before protobuf existed, whichever form the
// object was written in.
func TestProtobufOnTheWire(t *testing.T) {
	ctx := context.Background()
	const ns = "protobuf"
	rest := api.Client.KubevirtV1().RESTClient()
	getRaw := func(t *testing.T, accept, name string) ([]byte, string) {
		t.Helper()
		res := rest.Get().Namespace(ns).Resource("virtualmachines").Name(name).SetHeader("Accept", accept).Do(ctx)
		raw, err := res.Raw()
		require.NoError(t, err)
		var contentType string
		res.ContentType(&contentType)
		return raw, contentType
	}

	// The same VM written once through the clientset (protobuf) and once as JSON.
	vm := newVM("pb", v1.RunStrategyHalted)
	vm.Spec.Template.Spec.Domain.Devices.Disks[0].BootOrder = new(uint)
	*vm.Spec.Template.Spec.Domain.Devices.Disks[0].BootOrder = 1
	vm.Spec.Template.Spec.Domain.Memory = &v1.Memory{Guest: ptrQuantity("96Mi")}
	vm.Spec.Template.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	created, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
	require.NoError(t, err)
	jsonVM := vm.DeepCopy()
	jsonVM.Name = "json"
	jsonVM.TypeMeta = metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"}
	body, err := json.Marshal(jsonVM)
	require.NoError(t, err)
	require.NoError(t, rest.Post().Namespace(ns).Resource("virtualmachines").SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error())

	t.Run("protobuf answers to protobuf", func(t *testing.T) {
		raw, contentType := getRaw(t, runtime.ContentTypeProtobuf+", application/json", "pb")
		assert.Equal(t, runtime.ContentTypeProtobuf, contentType)
		require.True(t, strings.HasPrefix(string(raw), protobufMagic), "a protobuf body")
		obj, _, err := protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme).Decode(raw, nil, nil)
		require.NoError(t, err)
		got := obj.(*v1.VirtualMachine)
		got.TypeMeta = metav1.TypeMeta{}
		assert.Equal(t, created, got)
	})

	t.Run("JSON does not depend on how the object was written", func(t *testing.T) {
		fromProtobuf, contentType := getRaw(t, "application/json", "pb")
		assert.Equal(t, "application/json", contentType)
		fromJSON, _ := getRaw(t, "application/json", "json")
		assert.JSONEq(t, withoutMetadata(t, fromJSON), withoutMetadata(t, fromProtobuf))
	})

	t.Run("lists and watches in protobuf", func(t *testing.T) {
		w, err := api.Client.KubevirtV1().VirtualMachines(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
		require.NoError(t, err)
		defer w.Stop()
		list, err := api.Client.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, list.Items, 2)
		select {
		case ev := <-w.ResultChan():
			require.Equal(t, watch.Added, ev.Type)
			assert.Equal(t, "json", ev.Object.(*v1.VirtualMachine).Name)
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
	})

	t.Run("an action's protobuf body must be of the action's kind", func(t *testing.T) {
		var buf bytes.Buffer
		s := protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme)
		require.NoError(t, apiserver.Codecs.EncoderForVersion(s, v1.SchemeGroupVersion).Encode(&v1.StopOptions{}, &buf))
		err := rest.Put().Namespace(ns).Resource("virtualmachines").Name("pb").SubResource("start").
			SetHeader("Content-Type", runtime.ContentTypeProtobuf).Body(buf.Bytes()).Do(ctx).Error()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the request body is a StopOptions, not a StartOptions")
		_, err = api.Client.KubevirtV1().VirtualMachines(ns).Start(ctx, "pb", &v1.StartOptions{DryRun: []string{metav1.DryRunAll}}, metav1.UpdateOptions{})
		assert.NoError(t, err, "the clientset's own protobuf body")
	})

	t.Run("delete-collection as the namespace controller sends it", func(t *testing.T) {
		var code int
		rest.Delete().Namespace(ns).Resource("virtualmachines").
			SetHeader("Accept", runtime.ContentTypeProtobuf+", application/json").Do(ctx).StatusCode(&code)
		assert.Equal(t, 200, code)
	})
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// withoutMetadata drops what differs between two objects of the same spec.
func withoutMetadata(t *testing.T, raw []byte) string {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	delete(obj, "metadata")
	out, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(out)
}

// TestStorageMediaType: virt-api writes protobuf to etcd; values written as JSON (by a virt-api
// before protobuf, or with --storage-media-type=application/json) stay readable and become
// protobuf at their next write.
func TestStorageMediaType(t *testing.T) {
	ctx := context.Background()
	etcd := framework.StartTLSEtcd(t)
	mediaType := "application/json"
	api := framework.StartVirtAPIWith(t, func(o *virtapi.Options) {
		o.EmbeddedEtcdDir = ""
		fs := pflag.NewFlagSet("virt-api", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse([]string{"--etcd-servers=" + etcd.URL, "--etcd-cafile=" + etcd.CA.CertFile,
			"--etcd-certfile=" + etcd.Client.CertFile, "--etcd-keyfile=" + etcd.Client.KeyFile,
			"--storage-media-type=" + mediaType}))
	})
	admin := rawEtcd(t, etcd.URL, etcdClientTLS(t, etcd))
	stored := func(t *testing.T, name string) string {
		t.Helper()
		resp, err := admin.Get(ctx, "/hangar/kubevirt.io/virtualmachines/storage/"+name)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		return string(resp.Kvs[0].Value)
	}

	const ns = "storage"
	vms := api.Client.KubevirtV1().VirtualMachines(ns)
	_, err := vms.Create(ctx, newVM("old", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(stored(t, "old"), `{"kind":"VirtualMachine","apiVersion":"kubevirt.io/v1"`), stored(t, "old"))
	// instancetype.kubevirt.io goes through the same etcd options, in its own version.
	its, err := instancetypeclient.NewForConfig(api.Config)
	require.NoError(t, err)
	clusterInstancetypes := its.InstancetypeV1beta1().VirtualMachineClusterInstancetypes()
	storedInstancetype := func(t *testing.T, name string) string {
		t.Helper()
		resp, err := admin.Get(ctx, "/hangar/instancetype.kubevirt.io/virtualmachineclusterinstancetypes/"+name)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		return string(resp.Kvs[0].Value)
	}
	_, err = clusterInstancetypes.Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: instancetypeSpec(1, "1Gi")}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(storedInstancetype(t, "old"),
		`{"kind":"VirtualMachineClusterInstancetype","apiVersion":"instancetype.kubevirt.io/v1beta1"`), storedInstancetype(t, "old"))

	mediaType = runtime.ContentTypeProtobuf
	api.Restart(t)
	_, err = vms.Create(ctx, newVM("new", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(stored(t, "new"), protobufMagic), "a new object is protobuf")
	assert.True(t, strings.HasPrefix(stored(t, "old"), "{"), "an old one stays as it was")

	old, err := vms.Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err, "JSON in etcd is read")
	list, err := vms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 2)
	old.Labels["touched"] = "yes"
	_, err = vms.Update(ctx, old, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(stored(t, "old"), protobufMagic), "rewritten as protobuf")

	_, err = clusterInstancetypes.Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: instancetypeSpec(2, "2Gi")}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(storedInstancetype(t, "new"), protobufMagic), "a new instance type is protobuf")
	oldInstancetype, err := clusterInstancetypes.Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err, "JSON in etcd is read")
	assert.Equal(t, uint32(1), oldInstancetype.Spec.CPU.Guest)
}
