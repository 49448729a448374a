package render

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

func testSettings(mutate ...func(*Settings)) Settings {
	s := Settings{
		Version: "v0.1.0",
		Images: Images{VirtAPI: "registry.test/hangar/virt-api@sha256:a", VirtController: "registry.test/hangar/virt-controller@sha256:c",
			VirtHandler: "registry.test/hangar/virt-handler@sha256:h", VirtLauncher: "registry.test/hangar/virt-launcher@sha256:l",
			Etcd: "registry.test/hangar/etcd@sha256:e"},
		LauncherImage: "registry.test/hangar/virt-launcher@sha256:l",
		CABundle:      []byte("CA"),
		TrustHashes:   map[string]string{VirtAPIName: "api-hash", EtcdName: "etcd-hash"},
	}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

// find returns the rendered object of a kind and name.
func find[T runtime.Object](t *testing.T, objs []Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if typed, ok := o.Object.(T); ok {
			if m, _ := meta.Accessor(typed); m.GetName() == name {
				return typed
			}
		}
	}
	var zero T
	t.Fatalf("no %T %s rendered", zero, name)
	return zero
}

func TestObjectsDefaults(t *testing.T) {
	objs, err := Objects(testSettings())
	require.NoError(t, err)

	last := PhaseEtcd
	for _, o := range objs {
		m, err := meta.Accessor(o.Object)
		require.NoError(t, err)
		assert.Equal(t, ManagedBy, m.GetLabels()[ManagedByLabel], "%T %s", o.Object, m.GetName())
		assert.Equal(t, "v0.1.0", m.GetLabels()[VersionLabel])
		assert.GreaterOrEqual(t, o.Phase, last, "objects come in phase order")
		last = o.Phase
	}

	api := find[*appsv1.Deployment](t, objs, VirtAPIName)
	assert.Equal(t, "registry.test/hangar/virt-api@sha256:a", api.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, corev1.PullIfNotPresent, api.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	assert.Equal(t, int32(2), *api.Spec.Replicas)
	assert.Equal(t, "api-hash", api.Spec.Template.Annotations[TrustHashAnnotation])
	assert.NotContains(t, api.Spec.Template.Spec.Containers[0].Args, "--authorize-webhook-callers")

	handler := find[*appsv1.DaemonSet](t, objs, VirtHandlerName)
	assert.Equal(t, "registry.test/hangar/virt-handler@sha256:h", handler.Spec.Template.Spec.InitContainers[0].Image,
		"the QEMU probe runs from the handler's image, the launchers' root file system")
	assert.Equal(t, "registry.test/hangar/virt-handler@sha256:h", handler.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, handler.Spec.Template.Spec.Tolerations)

	etcd := find[*appsv1.StatefulSet](t, objs, EtcdName)
	assert.Equal(t, int32(1), *etcd.Spec.Replicas)
	assert.Contains(t, etcd.Spec.Template.Spec.Containers[0].Args, "--quota-backend-bytes=4294967296")
	assert.Equal(t, "5Gi", ptr.To(etcd.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]).String(),
		"the volume holds the quota and a quarter")
	assert.Nil(t, etcd.Spec.VolumeClaimTemplates[0].Spec.StorageClassName, "the cluster's default class")

	config := find[*corev1.ConfigMap](t, objs, ConfigName)
	assert.Equal(t, map[string]string{"useEmulation": "false", "launcherImage": "registry.test/hangar/virt-launcher@sha256:l"}, config.Data)
	for _, o := range objs {
		assert.False(t, launcherDevicesPolicy(o.Object), "no launcher devices policy without launcherDevicesOnly")
	}

	for _, name := range []string{"v1.kubevirt.io", "v1alpha3.kubevirt.io", "v1.subresources.kubevirt.io", "v1beta1.instancetype.kubevirt.io", "v1beta1.snapshot.kubevirt.io", "v1beta1.clone.kubevirt.io", "v1beta1.export.kubevirt.io"} {
		assert.Equal(t, []byte("CA"), find[*apiregistrationv1.APIService](t, objs, name).Spec.CABundle, name)
	}
	webhook := find[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "virt-api-validator")
	assert.Equal(t, []byte("CA"), webhook.Webhooks[0].ClientConfig.CABundle)
}

func TestObjectsSettings(t *testing.T) {
	infra := &operatorv1alpha1.NodePlacement{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
		Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}}
	objs, err := Objects(testSettings(func(s *Settings) {
		s.Spec.Infra = &operatorv1alpha1.ComponentConfig{NodePlacement: infra, Replicas: ptr.To[int32](3)}
		s.Spec.Workloads = &operatorv1alpha1.ComponentConfig{NodePlacement: &operatorv1alpha1.NodePlacement{
			NodeSelector: map[string]string{"kvm": "true"}}}
		s.Spec.Etcd = operatorv1alpha1.EtcdSpec{Replicas: ptr.To[int32](3), StorageClassName: ptr.To("fast"),
			QuotaBackendBytes: ptr.To(resource.MustParse("2Gi")), Storage: ptr.To(resource.MustParse("8Gi"))}
		s.Spec.ImagePullPolicy = corev1.PullAlways
		s.Spec.Configuration = operatorv1alpha1.HangarConfiguration{
			DeveloperConfiguration: &operatorv1alpha1.DeveloperConfiguration{UseEmulation: true, FeatureGates: []string{"ImageVolume"},
				CPUAllocationRatio: ptr.To(4)},
			EvictionStrategy:            ptr.To(kubevirtv1.EvictionStrategyLiveMigrate),
			Migrations:                  &kubevirtv1.MigrationConfiguration{ParallelMigrationsPerCluster: ptr.To[uint32](3)},
			NodeUnresponsiveGracePeriod: &metav1.Duration{Duration: 20e9},
			AuthorizeWebhookCallers:     true,
			LauncherDevicesOnly:         true,
		}
		s.Spec.WorkloadUpdateStrategy = operatorv1alpha1.WorkloadUpdateStrategy{
			WorkloadUpdateMethods: []operatorv1alpha1.WorkloadUpdateMethod{operatorv1alpha1.WorkloadUpdateMethodLiveMigrate},
			BatchEvictionSize:     ptr.To(3), BatchEvictionInterval: &metav1.Duration{Duration: 30e9}}
	}))
	require.NoError(t, err)

	api := find[*appsv1.Deployment](t, objs, VirtAPIName)
	assert.Equal(t, int32(3), *api.Spec.Replicas)
	assert.Equal(t, infra.NodeSelector, api.Spec.Template.Spec.NodeSelector)
	assert.Equal(t, infra.Tolerations, api.Spec.Template.Spec.Tolerations)
	assert.NotNil(t, api.Spec.Template.Spec.Affinity, "the manifest's anti-affinity stays")
	assert.Contains(t, api.Spec.Template.Spec.Containers[0].Args, "--authorize-webhook-callers")
	assert.Equal(t, corev1.PullAlways, api.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	assert.Equal(t, infra.NodeSelector, find[*appsv1.Deployment](t, objs, VirtControllerName).Spec.Template.Spec.NodeSelector)

	handler := find[*appsv1.DaemonSet](t, objs, VirtHandlerName)
	assert.Equal(t, map[string]string{"kvm": "true"}, handler.Spec.Template.Spec.NodeSelector)

	etcd := find[*appsv1.StatefulSet](t, objs, EtcdName)
	assert.Equal(t, int32(3), *etcd.Spec.Replicas)
	assert.Contains(t, etcd.Spec.Template.Spec.Containers[0].Args, "--initial-cluster="+
		"hangar-etcd-0=https://hangar-etcd-0.hangar-etcd-peers.hangar.svc:2380,"+
		"hangar-etcd-1=https://hangar-etcd-1.hangar-etcd-peers.hangar.svc:2380,"+
		"hangar-etcd-2=https://hangar-etcd-2.hangar-etcd-peers.hangar.svc:2380")
	assert.Contains(t, etcd.Spec.Template.Spec.Containers[0].Args, "--quota-backend-bytes=2147483648")
	assert.Len(t, etcd.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, 1,
		"members on distinct nodes")
	assert.Equal(t, "fast", *etcd.Spec.VolumeClaimTemplates[0].Spec.StorageClassName)
	assert.Equal(t, "8Gi", ptr.To(etcd.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]).String())

	config := find[*corev1.ConfigMap](t, objs, ConfigName)
	assert.Equal(t, "true", config.Data["useEmulation"])
	assert.Equal(t, "ImageVolume", config.Data["featureGates"])
	assert.Equal(t, "4", config.Data["cpuAllocationRatio"])
	assert.Equal(t, "LiveMigrate", config.Data["evictionStrategy"])
	assert.Equal(t, "20s", config.Data["nodeUnresponsiveGracePeriod"])
	policy := find[*admissionregistrationv1.ValidatingAdmissionPolicy](t, objs, LauncherDevicesPolicyName)
	// Every API server that runs the ValidatingAdmissionPolicy plugin watches a parameter kind
	// cluster-wide; virt-api, which runs it too, may not (it would never be ready).
	assert.Nil(t, policy.Spec.ParamKind, "the policy takes no parameter")
	binding := find[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, objs, LauncherDevicesPolicyName)
	assert.Nil(t, binding.Spec.ParamRef)
	assert.Equal(t, LauncherDevicesPolicyName, binding.Spec.PolicyName)
	assert.Equal(t, "parallelMigrationsPerCluster: 3\n", config.Data["migrations"])
	assert.Equal(t, "LiveMigrate", config.Data["workloadUpdateMethods"])
	assert.Equal(t, "3", config.Data["batchEvictionSize"])
	assert.Equal(t, "30s", config.Data["batchEvictionInterval"])
}

func TestObjectsRefused(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Settings)
		err    string
	}{
		{name: "no image", mutate: func(s *Settings) { s.Images.Etcd = "" }, err: "no etcd image"},
		{name: "volume smaller than the quota", mutate: func(s *Settings) {
			s.Spec.Etcd.Storage = ptr.To(resource.MustParse("1Gi"))
		}, err: "spec.etcd.storage: 1Gi is smaller than etcd's quota 4Gi"},
		{name: "a bad setting", mutate: func(s *Settings) {
			s.Spec.Configuration.MemoryOverhead = ptr.To(resource.MustParse("-1Mi"))
		}, err: "memoryOverhead: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Objects(testSettings(tt.mutate))
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// TestMonitoringObjects: the dashboard's ConfigMap is always rendered, labelled for Grafana's
// sidecar; a PodMonitor per component and the PrometheusRule only of the kinds the cluster
// serves, each in Hangar's namespace with the operator's labels, with the phase of etcd (the
// first), so that an installation that does not come up is watched from its start.
func TestMonitoringObjects(t *testing.T) {
	podMonitor := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	prometheusRule := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
	tests := []struct {
		name   string
		served map[schema.GroupVersionKind]bool
		want   []string
	}{
		{name: "no Prometheus Operator", want: nil},
		{name: "both kinds served", served: map[schema.GroupVersionKind]bool{podMonitor: true, prometheusRule: true},
			want: []string{"PodMonitor/virt-api", "PodMonitor/virt-controller", "PodMonitor/virt-handler", "PrometheusRule/hangar"}},
		{name: "only PrometheusRule served", served: map[schema.GroupVersionKind]bool{prometheusRule: true, podMonitor: false},
			want: []string{"PrometheusRule/hangar"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Objects(testSettings(func(s *Settings) { s.Served = tt.served }))
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				u, ok := o.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				got = append(got, u.GetKind()+"/"+u.GetName())
				assert.Equal(t, Namespace, u.GetNamespace())
				assert.Equal(t, ManagedBy, u.GetLabels()[ManagedByLabel])
				assert.Equal(t, "v0.1.0", u.GetLabels()[VersionLabel])
				assert.Equal(t, "true", u.GetLabels()["prometheus.kubevirt.io"], "what a Prometheus selects KubeVirt's by")
				assert.Equal(t, PhaseEtcd, o.Phase)
			}
			sort.Strings(got)
			assert.Equal(t, tt.want, got)

			dashboard := find[*corev1.ConfigMap](t, objs, "hangar-grafana-dashboard")
			assert.Equal(t, "1", dashboard.Labels["grafana_dashboard"])
			assert.Equal(t, ManagedBy, dashboard.Labels[ManagedByLabel])
			assert.Equal(t, Namespace, dashboard.Namespace)
			assert.True(t, json.Valid([]byte(dashboard.Data["hangar-vms.json"])))
		})
	}
}
