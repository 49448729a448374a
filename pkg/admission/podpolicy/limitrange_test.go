package podpolicy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func limitRange(name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func TestLimitRanges(t *testing.T) {
	container := corev1.LimitTypeContainer
	mem := func(s string) corev1.ResourceList { return corev1.ResourceList{corev1.ResourceMemory: q(s)} }
	cpu := func(s string) corev1.ResourceList { return corev1.ResourceList{corev1.ResourceCPU: q(s)} }
	withLimits := func(l corev1.ResourceList) func(*v1.VirtualMachineInstance) {
		return func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Resources.Limits = l }
	}
	tests := []struct {
		name        string
		vmi         *v1.VirtualMachineInstance
		objs        []runtime.Object
		wantInvalid bool
		wantMsg     string // "" allowed
	}{
		{name: "room enough", objs: []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Max: mem("1Gi"), Default: mem("1Gi")})}},
		// As the API server stores it: max defaults default, which becomes the limit of the
		// compute container, below what it requests.
		{name: "max memory below the launcher's, as stored (default = max)",
			objs:        []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Max: mem("100Mi"), Default: mem("100Mi")})},
			wantInvalid: true,
			wantMsg:     "launcher pod: container compute: memory request 357Mi is more than its limit 100Mi (the default limit of LimitRange lr)"},
		{name: "max memory without a default: the limit is missing",
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Max: mem("100Mi")})},
			wantMsg: "launcher pod: LimitRange lr: container compute: maximum memory usage per Container is 100Mi, but no limit is specified"},
		{name: "max memory with a limit over it", vmi: testVMI(noDisks, withLimits(mem("1Gi"))),
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Max: mem("512Mi")})},
			wantMsg: "LimitRange lr: container compute: maximum memory usage per Container is 512Mi, but limit is 1353Mi"},
		{name: "min memory over the copy helpers' 40Mi",
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Min: mem("64Mi")})},
			wantMsg: "LimitRange lr: container install-copy-helper: minimum memory usage per Container is 64Mi, but request is 40Mi"},
		{name: "min cpu over the launcher's 100m", vmi: testVMI(noDisks),
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Min: cpu("200m")})},
			wantMsg: "LimitRange lr: container compute: minimum cpu usage per Container is 200m, but request is 100m"},
		{name: "a default request can satisfy min", vmi: testVMI(noDisks),
			objs: []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Min: mem("1Mi"), DefaultRequest: corev1.ResourceList{"ephemeral-storage": q("1Gi")}})}},
		{name: "ratio: no limit", vmi: testVMI(noDisks),
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, MaxLimitRequestRatio: mem("2")})},
			wantMsg: "memory max limit to request ratio per Container is 2, but no limit is specified or limit is 0"},
		{name: "ratio: over", vmi: testVMI(noDisks, withLimits(mem("1Gi"))),
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, MaxLimitRequestRatio: mem("2")})},
			wantMsg: "memory max limit to request ratio per Container is 2, but provided ratio is 2.960613"},
		{name: "ratio: within", vmi: testVMI(noDisks, withLimits(mem("400Mi"))),
			objs: []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, MaxLimitRequestRatio: mem("2")})}},
		{name: "defaults fill limits, then the ratio holds", vmi: testVMI(noDisks),
			objs: []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: container, Default: mem("400Mi"), MaxLimitRequestRatio: mem("1500m")})}},
		{name: "Pod max on the pod's total (sum of containers, max of init containers)", vmi: testVMI(withLimits(mem("256Mi"))),
			objs:    []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: mem("400Mi")})},
			wantMsg: "LimitRange lr: maximum memory usage per Pod is 400Mi, but limit is 585Mi"},
		{name: "Pod min", objs: []runtime.Object{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: mem("1Gi")})},
			wantMsg: "LimitRange lr: minimum memory usage per Pod is 1Gi, but request is 357Mi"},
		{name: "a LimitRange of another namespace", objs: []runtime.Object{func() runtime.Object {
			lr := limitRange("lr", corev1.LimitRangeItem{Type: container, Min: mem("1Gi")})
			lr.Namespace = "other"
			return lr
		}()}},
		{name: "the first LimitRange by name gives the default",
			objs: []runtime.Object{
				limitRange("b", corev1.LimitRangeItem{Type: container, Default: mem("100Mi")}),
				limitRange("a", corev1.LimitRangeItem{Type: container, Default: mem("200Mi")}),
			},
			wantInvalid: true, wantMsg: "more than its limit 200Mi (the default limit of LimitRange a)"},
		// LimitRanger's defaults come before the quota, so they can satisfy it.
		{name: "defaults satisfy a quota on limits", vmi: testVMI(noDisks),
			objs: []runtime.Object{
				limitRange("lr", corev1.LimitRangeItem{Type: container, Default: corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("1")}}),
				quota("q1", corev1.ResourceList{corev1.ResourceLimitsMemory: q("2Gi"), corev1.ResourceLimitsCPU: q("2")}, nil),
			}},
		{name: "defaults count against the quota",
			objs: []runtime.Object{
				limitRange("lr", corev1.LimitRangeItem{Type: container, Default: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}),
				quota("q1", corev1.ResourceList{corev1.ResourceLimitsMemory: q("1Gi")}, corev1.ResourceList{corev1.ResourceLimitsMemory: q("512Mi")}),
			}, wantMsg: "exceeded quota: q1, requested: limits.memory=1Gi, used: limits.memory=512Mi, limited: limits.memory=1Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmi := tc.vmi
			if vmi == nil {
				vmi = testVMI()
			}
			refusal, err := checkerWith(t, nil, tc.objs...).check(context.Background(), vmi)
			require.NoError(t, err)
			if tc.wantMsg == "" {
				assert.Nil(t, refusal)
				return
			}
			require.NotNil(t, refusal)
			assert.Equal(t, tc.wantInvalid, refusal.Invalid)
			assert.Contains(t, refusal.Message, tc.wantMsg)
		})
	}
}
