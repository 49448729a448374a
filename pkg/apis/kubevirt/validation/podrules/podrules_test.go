package podrules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func fields(list field.ErrorList) []string {
	var out []string
	for _, e := range list {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestValidateAffinity(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	tests := []struct {
		name string
		a    *corev1.Affinity
		want []string
	}{
		{"nil", nil, nil},
		{"a valid mix", &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"8"}}},
					MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
					// A preference may name a value no label can have: the pod API allows it.
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"not a label value"}}},
				}}},
			},
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: sel, TopologyKey: "kubernetes.io/hostname", Namespaces: []string{"prod"}, MatchLabelKeys: []string{"tier"},
			}}},
		}, nil},
		{"required node terms: operators, values, keys", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpIn},
					{Key: "zone", Operator: corev1.NodeSelectorOpExists, Values: []string{"a"}},
					{Key: "cpus", Operator: corev1.NodeSelectorOpLt, Values: []string{"1", "2"}},
					{Key: "bad key!", Operator: "Near", Values: []string{"a b"}},
				},
				MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.labels", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}},
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpExists},
				},
			}}},
		}}, []string{
			"FieldValueRequired nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
			"FieldValueForbidden nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values",
			"FieldValueRequired nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values",
			"FieldValueInvalid nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator",
			"FieldValueInvalid nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].key",
			"FieldValueInvalid nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].values[0]",
			"FieldValueInvalid nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key",
			"FieldValueInvalid nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].operator",
		}},
		{"preferred node term weight", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}},
		}}, []string{"FieldValueInvalid nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"}},
		{"pod affinity terms", &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}, TopologyKey: "zone"},
			{Namespaces: []string{"Not_A_Namespace"}, MatchLabelKeys: []string{"tier"}},
			{LabelSelector: sel, TopologyKey: "zone", MatchLabelKeys: []string{"app", "tier"}, MismatchLabelKeys: []string{"tier"}},
		}}}, []string{
			"FieldValueInvalid podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator",
			"FieldValueInvalid podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].namespaces[0]",
			"FieldValueForbidden podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].matchLabelKeys",
			"FieldValueRequired podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey",
			"FieldValueInvalid podAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].matchLabelKeys[0]",
			"FieldValueInvalid podAffinity.requiredDuringSchedulingIgnoredDuringExecution[2].matchLabelKeys[1]",
		}},
		{"anti-affinity weight and topology key", &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 101, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "not a key"}}},
		}}, []string{
			"FieldValueInvalid podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
			"FieldValueInvalid podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.ElementsMatch(t, tc.want, fields(ValidateAffinity(tc.a, nil)))
		})
	}
}

func TestValidateTolerations(t *testing.T) {
	tests := []struct {
		name string
		t    corev1.Toleration
		want []string
	}{
		{"match everything", corev1.Toleration{Operator: corev1.TolerationOpExists}, nil},
		{"equal by default", corev1.Toleration{Key: "dedicated", Value: "vms", Effect: corev1.TaintEffectNoSchedule}, nil},
		{"no key without Exists", corev1.Toleration{Value: "x"}, []string{"FieldValueInvalid [0].operator"}},
		{"a value that is no label value", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "a b"}, []string{"FieldValueInvalid [0].value"}},
		{"a value with Exists", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}, []string{"FieldValueInvalid [0].value"}},
		{"seconds without NoExecute", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](5)}, []string{"FieldValueInvalid [0].effect"}},
		{"unknown operator and effect", corev1.Toleration{Key: "k", Operator: "Maybe", Effect: "Sometimes"},
			[]string{"FieldValueNotSupported [0].operator", "FieldValueNotSupported [0].effect"}},
		{"bad key", corev1.Toleration{Key: "bad key", Operator: corev1.TolerationOpExists}, []string{"FieldValueInvalid [0].key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.ElementsMatch(t, tc.want, fields(ValidateTolerations([]corev1.Toleration{tc.t}, nil)))
		})
	}
}

func TestValidateImage(t *testing.T) {
	for _, ok := range []string{"busybox", "quay.io/containerdisks/fedora:40", "localhost:5000/a/b@sha256:" + string(make64('a'))} {
		assert.Empty(t, ValidateImage(ok, field.NewPath("image")), ok)
	}
	for _, bad := range []string{"", " busybox", "busybox\n", "Busybox", "a b", "reg:port:x/y", "x@sha256:short"} {
		assert.NotEmpty(t, ValidateImage(bad, field.NewPath("image")), "%q", bad)
	}
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

func goodPod() *corev1.Pod {
	one := resource.MustParse("1")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "virt-launcher-vm-", Namespace: "ns"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](45),
			InitContainers: []corev1.Container{{Name: "container-disk-root", Image: "example/disk", ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts: []corev1.VolumeMount{{Name: "disks", MountPath: "/disks"}}}},
			Containers: []corev1.Container{{
				Name: "compute", Image: "hangar/virt-launcher:latest", ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{{Name: "HANGAR_VMI_NAME", Value: "vm"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "devices.kubevirt.io/kvm": one},
					Limits:   corev1.ResourceList{"devices.kubevirt.io/kvm": one},
				},
				VolumeMounts:  []corev1.VolumeMount{{Name: "disks", MountPath: "/disks", ReadOnly: true}},
				VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
		},
	}
}

func TestValidatePod(t *testing.T) {
	require.Empty(t, ValidatePod(goodPod()), "the base pod must be valid")
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"init and regular containers share a name", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "compute" },
			[]string{"FieldValueDuplicate spec.containers[0].name"}},
		{"a container name that is no DNS label", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "container-disk-" + string(make64('a')) },
			[]string{"FieldValueInvalid spec.initContainers[0].name"}},
		{"two volumes of one name", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "disks" },
			[]string{"FieldValueDuplicate spec.volumes[1].name", "FieldValueNotFound spec.containers[0].volumeDevices[0].name"}},
		{"a mount of no volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nothing" },
			[]string{"FieldValueNotFound spec.containers[0].volumeMounts[0].name"}},
		{"a device over a mount", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeDevices[0].DevicePath = "/disks" },
			[]string{"FieldValueInvalid spec.containers[0].volumeDevices[0].devicePath"}},
		{"a device of an emptyDir", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeDevices[0].Name = "disks" },
			[]string{"FieldValueInvalid spec.containers[0].volumeDevices[0].name", "FieldValueInvalid spec.containers[0].volumeDevices[0].name"}},
		{"a request above its limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("10m")
		},
			[]string{"FieldValueInvalid spec.containers[0].resources.requests[cpu]"}},
		{"a negative request", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("-1")
		},
			[]string{"FieldValueInvalid spec.containers[0].resources.requests[cpu]"}},
		{"a device plugin resource requested but not limited", func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, "devices.kubevirt.io/kvm") },
			[]string{"FieldValueInvalid spec.containers[0].resources.requests[devices.kubevirt.io/kvm]"}},
		{"a negative grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			[]string{"FieldValueInvalid spec.terminationGracePeriodSeconds"}},
		{"an image with whitespace", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "example/disk " },
			[]string{"FieldValueInvalid spec.initContainers[0].image"}},
		{"a generateName that is no DNS subdomain", func(p *corev1.Pod) { p.GenerateName = "Virt_Launcher-" },
			[]string{"FieldValueInvalid metadata.generateName", "FieldValueInvalid metadata.name"}},
		{"scheduling fields", func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.SchedulerName, p.Spec.PriorityClassName = "a.b", "A B", "x_y"
			p.Spec.NodeSelector = map[string]string{"k": "a b"}
		}, []string{"FieldValueInvalid spec.hostname", "FieldValueInvalid spec.schedulerName", "FieldValueInvalid spec.priorityClassName",
			"FieldValueInvalid spec.nodeSelector"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := goodPod()
			tc.mutate(p)
			assert.ElementsMatch(t, tc.want, fields(ValidatePod(p)))
		})
	}
}
