package podpolicy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

// checkerWith returns a checker whose caches hold objs (Namespaces, ResourceQuotas,
// LimitRanges), under the default cluster configuration and Pod Security defaults.
func checkerWith(t *testing.T, ps *PodSecurity, objs ...runtime.Object) *Checker {
	t.Helper()
	indexers := map[string]cache.Indexer{}
	indexer := func(kind string) cache.Indexer {
		if indexers[kind] == nil {
			indexers[kind] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		return indexers[kind]
	}
	for _, obj := range objs {
		var kind string
		switch obj.(type) {
		case *corev1.Namespace:
			kind = "ns"
		case *corev1.ResourceQuota:
			kind = "quota"
		case *corev1.LimitRange:
			kind = "limitrange"
		default:
			t.Fatalf("unexpected object %T", obj)
		}
		require.NoError(t, indexer(kind).Add(obj))
	}
	if ps == nil {
		ps = podSecurity(t, "privileged", nil, false)
	}
	c := newChecker(fake.NewClientset(), corelisters.NewNamespaceLister(indexer("ns")),
		corelisters.NewResourceQuotaLister(indexer("quota")), corelisters.NewLimitRangeLister(indexer("limitrange")),
		clusterconfig.NewStore(clusterconfig.Defaults()), Config{PodSecurity: ps})
	synced := cache.InformerSynced(func() bool { return true })
	c.configSynced.Store(&synced)
	return c
}

func podSecurity(t *testing.T, level string, exemptNamespaces []string, exempt bool) *PodSecurity {
	t.Helper()
	def, err := ParseLevelVersion(level, "latest")
	require.NoError(t, err)
	ps, err := NewPodSecurity(def, exemptNamespaces, exempt)
	require.NoError(t, err)
	return ps
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// testVMI is a small instance in namespace ns: 128Mi, a containerDisk (so the pod has init
// containers), KVM (the default configuration). Its launcher pod asks for 357Mi and 100m.
func testVMI(mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "uid-1"},
		Spec: v1.VirtualMachineInstanceSpec{
			Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("128Mi")},
			}},
			Volumes: []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "example/disk"}}}},
		},
	}
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func noDisks(vmi *v1.VirtualMachineInstance) { vmi.Spec.Volumes = nil }

func TestBuiltPodValidation(t *testing.T) {
	tests := []struct {
		name      string
		vmi       *v1.VirtualMachineInstance
		wantField string
		wantMsg   string
	}{
		{"spec.hostname that is no DNS label names the field", testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Hostname = "a.b" }),
			"spec.hostname", "hostname must be a DNS label"},
		{"an instance the launcher pod cannot be built for", testVMI(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests = nil
		}), "spec", "the launcher pod cannot be built: instance ns/vm1 has no memory size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := checkerWith(t, nil)
			refusal, err := c.check(context.Background(), tc.vmi)
			require.NoError(t, err)
			require.NotNil(t, refusal)
			assert.True(t, refusal.Invalid, "pod validation answers 422")
			assert.Contains(t, refusal.Message, tc.wantMsg)
			err = refusal.Error(vmiResource, vmiKind, tc.vmi.Name, nil)
			require.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.wantField+": Invalid value")
		})
	}
	for name, vmi := range map[string]*v1.VirtualMachineInstance{
		"a valid instance passes": testVMI(),
		// As KubeVirt: the hostname is the name up to its first dot.
		"a name with a dot passes":      testVMI(func(v *v1.VirtualMachineInstance) { v.Name = "web.1" }),
		"a long name is cut to a label": testVMI(func(v *v1.VirtualMachineInstance) { v.Name = strings.Repeat("a", 62) + "-b" }),
		// The builder asks for no more CPU per vCPU than the limit.
		"a CPU limit below 100m per vCPU": testVMI(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU = &v1.CPU{Cores: 4}
			v.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("100m")}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			refusal, err := checkerWith(t, nil).check(context.Background(), vmi)
			require.NoError(t, err)
			assert.Nil(t, refusal)
		})
	}
}

// TestPodSecurityOfLauncherPods: launcher pods meet restricted, so every namespace admits them
// whatever its level; exemptions change nothing.
func TestPodSecurityOfLauncherPods(t *testing.T) {
	for _, labels := range []map[string]string{
		nil,
		{psaapi.EnforceLevelLabel: "privileged"},
		{psaapi.EnforceLevelLabel: "baseline"},
		{psaapi.EnforceLevelLabel: "restricted"},
		{psaapi.EnforceLevelLabel: "restricted", psaapi.EnforceVersionLabel: "v1.30"},
		{psaapi.EnforceLevelLabel: "bogus"}, // restricted:latest
	} {
		for _, ps := range []*PodSecurity{nil, podSecurity(t, "restricted", nil, false)} {
			c := checkerWith(t, ps, namespace("ns", labels))
			refusal, err := c.check(context.Background(), testVMI())
			require.NoError(t, err)
			assert.Nil(t, refusal, "labels %v", labels)
		}
	}
}

// TestPodSecurityLevelOfANamespace: which level applies, seen through a pod that breaks
// baseline (a hostPath volume), as an older launcher pod did.
func TestPodSecurityLevelOfANamespace(t *testing.T) {
	hostPathPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "compute", Image: "x"}},
		Volumes:    []corev1.Volume{{Name: "sockets", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run"}}}},
	}}
	enforce := func(level string) map[string]string { return map[string]string{psaapi.EnforceLevelLabel: level} }
	tests := []struct {
		name   string
		ps     *PodSecurity
		labels map[string]string
		want   string // "" allowed
	}{
		{name: "no label, privileged default", ps: podSecurity(t, "privileged", nil, false)},
		{name: "privileged namespace", ps: podSecurity(t, "privileged", nil, false), labels: enforce("privileged")},
		{name: "baseline", ps: podSecurity(t, "privileged", nil, false), labels: enforce("baseline"),
			want: `launcher pod would violate PodSecurity "baseline:latest": hostPath volumes (volume "sockets")`},
		{name: "restricted names every rule", ps: podSecurity(t, "privileged", nil, false), labels: enforce("restricted"),
			want: `"restricted:latest"`},
		{name: "the enforce-version label is honoured", ps: podSecurity(t, "privileged", nil, false),
			labels: map[string]string{psaapi.EnforceLevelLabel: "baseline", psaapi.EnforceVersionLabel: "v1.30"}, want: `"baseline:v1.30"`},
		{name: "an unreadable label is restricted:latest, as PodSecurity does", ps: podSecurity(t, "privileged", nil, false),
			labels: enforce("bogus"), want: `"restricted:latest"`},
		{name: "the default level of the flag applies without a label", ps: podSecurity(t, "baseline", nil, false), want: `"baseline:latest"`},
		{name: "a label below the default wins", ps: podSecurity(t, "restricted", nil, false), labels: enforce("privileged")},
		{name: "an exempt namespace is not checked", ps: podSecurity(t, "privileged", []string{"ns"}, false), labels: enforce("restricted")},
		{name: "an exempt virt-controller is not checked", ps: podSecurity(t, "privileged", nil, true), labels: enforce("restricted")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.ps.Check(hostPathPod, tc.labels)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}

// Launcher pods pass restricted; the evaluation of pods that do not must stay refused. These
// pods stand in for a launcher pod.
func TestPodSecurityLevels(t *testing.T) {
	restrictedPod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "compute", Image: "x", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
			Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}
	}
	tests := []struct {
		name       string
		mutate     func(*corev1.Pod)
		baseline   string // "" allowed, else a part of the refusal
		restricted string
	}{
		{name: "a restricted pod passes everywhere"},
		{name: "privilege escalation allowed", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}, restricted: "allowPrivilegeEscalation != false"},
		{name: "capabilities kept", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities = nil },
			restricted: "unrestricted capabilities"},
		{name: "NET_ADMIN added", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}, baseline: `non-default capabilities (container "compute" must not include "NET_ADMIN"`, restricted: "NET_ADMIN"},
		{name: "root allowed", mutate: func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = nil }, restricted: "runAsNonRoot != true"},
		{name: "no seccomp profile", mutate: func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile = nil }, restricted: "seccompProfile"},
		{name: "privileged", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true) },
			baseline: `privileged (container "compute" must not set securityContext.privileged=true)`, restricted: "privileged"},
		{name: "host network", mutate: func(p *corev1.Pod) { p.Spec.HostNetwork = true }, baseline: "host namespaces (hostNetwork=true)", restricted: "hostNetwork"},
		{name: "hostPath volume", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "sockets", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run"}}})
		}, baseline: `hostPath volumes (volume "sockets")`, restricted: "hostPath"},
		{name: "host port", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 22, HostPort: 2222}}
		}, baseline: "hostPort", restricted: "hostPort"},
	}
	ps := podSecurity(t, "privileged", nil, false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := restrictedPod()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			for level, want := range map[string]string{"baseline": tc.baseline, "restricted": tc.restricted} {
				msg := ps.Check(pod, map[string]string{psaapi.EnforceLevelLabel: level})
				if want == "" {
					assert.Empty(t, msg, level)
					continue
				}
				assert.Contains(t, msg, `launcher pod would violate PodSecurity "`+level+`:latest"`, level)
				assert.Contains(t, msg, want, level)
			}
			assert.Empty(t, ps.Check(pod, map[string]string{psaapi.EnforceLevelLabel: "privileged"}))
		})
	}
}

// The checks look at internal objects, as virt-api stores them.
func TestCheckInternalObjects(t *testing.T) {
	c := checkerWith(t, nil, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "none"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: q("0")}}})
	spec := kubevirt.VirtualMachineInstanceSpec{Domain: kubevirt.DomainSpec{Resources: kubevirt.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}}}}

	refusal, err := c.CheckInstance(context.Background(), &kubevirt.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi"}, Spec: spec})
	require.NoError(t, err)
	require.NotNil(t, refusal)
	assert.Equal(t, "launcher pod: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0", refusal.Message)

	vm := &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec: kubevirt.VirtualMachineSpec{Template: &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: spec}}}
	err = c.CheckStart(context.Background(), vm)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Equal(t, `virtualmachines.kubevirt.io "vm" is forbidden: launcher pod: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0`, err.Error())

	// The VM's template is where its instance's fields are.
	vm.Spec.Template.Spec.Hostname = "a.b"
	err = c.CheckStart(context.Background(), vm)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.template.spec.hostname: Invalid value")
}

func TestNotReady(t *testing.T) {
	c := checkerWith(t, nil)
	c.configSynced.Store(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.check(ctx, testVMI())
	assert.True(t, apierrors.IsServiceUnavailable(err), "%v", err)
}

// BenchmarkCheckInstance is the CPU cost of the checks on one instance create, in a namespace
// with a quota and a LimitRange: conversion, pod build, defaults, every check.
func BenchmarkCheckInstance(b *testing.B) {
	t := &testing.T{}
	c := checkerWith(t, nil,
		quota("roomy", corev1.ResourceList{corev1.ResourcePods: q("100000"), corev1.ResourceRequestsMemory: q("100Ti")}, nil),
		limitRange("roomy", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceMemory: q("64Gi")},
			Default: corev1.ResourceList{corev1.ResourceMemory: q("64Gi")}}))
	vmi := &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi"}, Spec: internalSpec()}
	vmi.Spec.Volumes = []kubevirt.Volume{{Name: "root", VolumeSource: kubevirt.VolumeSource{ContainerDisk: &kubevirt.ContainerDiskSource{Image: "example/disk"}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r, err := c.CheckInstance(ctx, vmi); err != nil || r != nil {
			b.Fatal(r, err)
		}
	}
}
