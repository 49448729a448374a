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

func quota(name string, hard, used corev1.ResourceList, mutate ...func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
	for _, m := range mutate {
		m(rq)
	}
	return rq
}

func scopes(s ...corev1.ResourceQuotaScope) func(*corev1.ResourceQuota) {
	return func(rq *corev1.ResourceQuota) { rq.Spec.Scopes = s }
}

func priorityIn(op corev1.ScopeSelectorOperator, values ...string) func(*corev1.ResourceQuota) {
	return func(rq *corev1.ResourceQuota) {
		rq.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}}
	}
}

func TestQuotas(t *testing.T) {
	noPods := corev1.ResourceList{corev1.ResourcePods: q("0")}
	tests := []struct {
		name    string
		vmi     *v1.VirtualMachineInstance
		objs    []runtime.Object
		wantMsg string // "" allowed
	}{
		{name: "no quota"},
		{name: "no pods left", objs: []runtime.Object{quota("q1", noPods, nil)},
			wantMsg: "launcher pod: exceeded quota: q1, requested: pods=1, used: pods=0, limited: pods=0"},
		{name: "count/pods counts too", objs: []runtime.Object{quota("q1", corev1.ResourceList{"count/pods": q("3")}, corev1.ResourceList{"count/pods": q("3")})},
			wantMsg: "exceeded quota: q1, requested: count/pods=1, used: count/pods=3, limited: count/pods=3"},
		{name: "memory requests: guest plus overhead", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceRequestsMemory: q("100Mi")}, nil)},
			wantMsg: "exceeded quota: q1, requested: requests.memory=357Mi, used: requests.memory=0, limited: requests.memory=100Mi"},
		{name: "memory is requests.memory", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceMemory: q("100Mi")}, nil)},
			wantMsg: "requested: memory=357Mi"},
		{name: "what is used counts", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceRequestsMemory: q("1Gi")},
			corev1.ResourceList{corev1.ResourceRequestsMemory: q("800Mi")})},
			wantMsg: "exceeded quota: q1, requested: requests.memory=357Mi, used: requests.memory=800Mi, limited: requests.memory=1Gi"},
		{name: "room enough", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceRequestsMemory: q("1Gi"), corev1.ResourcePods: q("10")},
			corev1.ResourceList{corev1.ResourceRequestsMemory: q("600Mi"), corev1.ResourcePods: q("9")})}},
		{name: "the KVM device is an extended resource", objs: []runtime.Object{quota("q1", corev1.ResourceList{"requests.devices.kubevirt.io/kvm": q("0")}, nil)},
			wantMsg: "exceeded quota: q1, requested: requests.devices.kubevirt.io/kvm=1"},
		{name: "init containers raise the CPU only when they ask for more", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceRequestsCPU: q("99m")}, nil)},
			wantMsg: "requested: requests.cpu=100m"},
		{name: "several resources over, sorted", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourcePods: q("0"), corev1.ResourceRequestsMemory: q("1Mi")}, nil)},
			wantMsg: "requested: pods=1,requests.memory=357Mi, used: pods=0,requests.memory=0, limited: pods=0,requests.memory=1Mi"},
		{name: "the first quota by name answers", objs: []runtime.Object{quota("zz", noPods, nil), quota("aa", noPods, nil)},
			wantMsg: "exceeded quota: aa,"},
		// A quota on limits demands that every container state them.
		{name: "a memory limit quota needs memory limits", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceLimitsMemory: q("10Gi")}, nil)},
			wantMsg: "launcher pod: failed quota: q1: must specify limits.memory"},
		{name: "every missing name, sorted", objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceLimitsMemory: q("10Gi"), corev1.ResourceLimitsCPU: q("10")}, nil)},
			wantMsg: "failed quota: q1: must specify limits.cpu,limits.memory"},
		{name: "init containers must state them too", vmi: testVMI(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}
		}), objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceLimitsCPU: q("10")}, nil)},
			wantMsg: "failed quota: q1: must specify limits.cpu"},
		{name: "limits stated everywhere", vmi: testVMI(noDisks, func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}
		}), objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceLimitsCPU: q("10"), corev1.ResourceLimitsMemory: q("2Gi")}, nil)}},
		{name: "memory limits over", vmi: testVMI(noDisks, func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}
		}), objs: []runtime.Object{quota("q1", corev1.ResourceList{corev1.ResourceLimitsMemory: q("1Gi")}, nil)},
			wantMsg: "requested: limits.memory=1353Mi"},
		// Scopes decide whether a quota applies to the launcher pod.
		{name: "BestEffort: a launcher pod always requests memory", objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeBestEffort))}},
		{name: "NotBestEffort", objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeNotBestEffort))},
			wantMsg: "exceeded quota: q1"},
		{name: "Terminating: no activeDeadlineSeconds", objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeTerminating))}},
		{name: "NotTerminating", objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort))},
			wantMsg: "exceeded quota: q1"},
		{name: "PriorityClass In matches the instance's class", vmi: testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.PriorityClassName = "high" }),
			objs: []runtime.Object{quota("q1", noPods, nil, priorityIn(corev1.ScopeSelectorOpIn, "high"))}, wantMsg: "exceeded quota: q1"},
		{name: "PriorityClass In, another class", vmi: testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.PriorityClassName = "low" }),
			objs: []runtime.Object{quota("q1", noPods, nil, priorityIn(corev1.ScopeSelectorOpIn, "high"))}},
		{name: "PriorityClass NotIn", objs: []runtime.Object{quota("q1", noPods, nil, priorityIn(corev1.ScopeSelectorOpNotIn, "high"))},
			wantMsg: "exceeded quota: q1"},
		{name: "PriorityClass Exists without a class", objs: []runtime.Object{quota("q1", noPods, nil, priorityIn(corev1.ScopeSelectorOpExists))}},
		{name: "PriorityClass in spec.scopes is Exists", vmi: testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.PriorityClassName = "low" }),
			objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopePriorityClass))}, wantMsg: "exceeded quota: q1"},
		{name: "CrossNamespacePodAffinity without such terms", objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity))}},
		{name: "CrossNamespacePodAffinity with a namespace selector", vmi: testVMI(func(v *v1.VirtualMachineInstance) {
			v.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: "kubernetes.io/hostname", NamespaceSelector: &metav1.LabelSelector{}}}}}
		}), objs: []runtime.Object{quota("q1", noPods, nil, scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity))}, wantMsg: "exceeded quota: q1"},
		{name: "a quota of another namespace", objs: []runtime.Object{quota("q1", noPods, nil, func(rq *corev1.ResourceQuota) { rq.Namespace = "other" })}},
		{name: "status not filled in yet: spec.hard counts, nothing used", objs: []runtime.Object{quota("q1", noPods, nil, func(rq *corev1.ResourceQuota) { rq.Status = corev1.ResourceQuotaStatus{} })},
			wantMsg: "exceeded quota: q1"},
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
			assert.False(t, refusal.Invalid, "quota answers 403")
			assert.Contains(t, refusal.Message, tc.wantMsg)
		})
	}
}
