package eviction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

type fakePods map[string]*corev1.Pod

func (f fakePods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := f[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

type fakeInstances struct {
	vmis    map[string]*kubevirt.VirtualMachineInstance
	marked  map[string]string
	dryRuns int
	markErr error
}

func (f *fakeInstances) Get(_ context.Context, ns, name string) (*kubevirt.VirtualMachineInstance, error) {
	if v, ok := f.vmis[ns+"/"+name]; ok {
		return v, nil
	}
	return nil, apierrors.NewNotFound(kubevirt.Resource("virtualmachineinstances"), name)
}

func (f *fakeInstances) MarkForEvacuation(_ context.Context, vmi *kubevirt.VirtualMachineInstance, node string, dryRun bool) error {
	if f.markErr != nil {
		return f.markErr
	}
	if dryRun {
		f.dryRuns++
		return nil
	}
	f.marked[vmi.Namespace+"/"+vmi.Name] = node
	return nil
}

func launcherPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "virt-launcher-vm1-abcde", UID: "pod-1",
			Labels: map[string]string{"kubevirt.io": "virt-launcher"}, Annotations: map[string]string{"kubevirt.io/domain": "vm1"}},
		Spec:   corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func instance(strategy *kubevirt.EvictionStrategy, migratable corev1.ConditionStatus, mutate ...func(*kubevirt.VirtualMachineInstance)) *kubevirt.VirtualMachineInstance {
	v := &kubevirt.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "vmi-1"},
		Spec:       kubevirt.VirtualMachineInstanceSpec{EvictionStrategy: strategy},
		Status: kubevirt.VirtualMachineInstanceStatus{Phase: kubevirt.Running, NodeName: "node-a",
			ActivePods: map[types.UID]string{"pod-1": "node-a"}},
	}
	if migratable != "" {
		v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: migratable}}
	}
	for _, m := range mutate {
		m(v)
	}
	return v
}

func strategy(s kubevirt.EvictionStrategy) *kubevirt.EvictionStrategy { return &s }

func TestAdmit(t *testing.T) {
	const evacuating = `Eviction triggered evacuation of VMI "ns/vm1"`
	tests := []struct {
		name        string
		pod         *corev1.Pod
		vmi         *kubevirt.VirtualMachineInstance
		cluster     kubevirt.EvictionStrategy
		dryRun      bool
		markErr     error
		wantAllowed bool
		wantMessage string
		wantMarked  string // the node the instance is marked to leave
	}{
		{name: "LiveMigrate and migratable: evacuate", pod: launcherPod(),
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue),
			wantMessage: evacuating, wantMarked: "node-a"},
		{name: "LiveMigrate, not migratable: refused with the reason", pod: launcherPod(),
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionFalse),
			wantMessage: "VMI vm1 is configured with an eviction strategy but is not live-migratable"},
		{name: "LiveMigrate, not yet assessed: refused", pod: launcherPod(),
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrate), ""),
			wantMessage: "VMI vm1 is configured with an eviction strategy but is not live-migratable"},
		{name: "LiveMigrateIfPossible and migratable: evacuate", pod: launcherPod(),
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrateIfPossible), corev1.ConditionTrue),
			wantMessage: evacuating, wantMarked: "node-a"},
		{name: "LiveMigrateIfPossible, not migratable: evicted", pod: launcherPod(),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrateIfPossible), corev1.ConditionFalse), wantAllowed: true},
		{name: "External: marked, even if not migratable", pod: launcherPod(),
			vmi:         instance(strategy(kubevirt.EvictionStrategyExternal), corev1.ConditionFalse),
			wantMessage: evacuating, wantMarked: "node-a"},
		{name: "None: evicted", pod: launcherPod(),
			vmi: instance(strategy(kubevirt.EvictionStrategyNone), corev1.ConditionTrue), wantAllowed: true},
		{name: "no strategy anywhere: evicted", pod: launcherPod(), vmi: instance(nil, corev1.ConditionTrue), wantAllowed: true},
		{name: "the cluster's strategy applies", pod: launcherPod(), vmi: instance(nil, corev1.ConditionTrue),
			cluster: kubevirt.EvictionStrategyLiveMigrate, wantMessage: evacuating, wantMarked: "node-a"},
		{name: "the instance's None beats the cluster's", pod: launcherPod(),
			vmi:     instance(strategy(kubevirt.EvictionStrategyNone), corev1.ConditionTrue),
			cluster: kubevirt.EvictionStrategyLiveMigrate, wantAllowed: true},
		{name: "already evacuating", pod: launcherPod(),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue,
				func(v *kubevirt.VirtualMachineInstance) { v.Status.EvacuationNodeName = "node-a" }),
			wantMessage: "Evacuation in progress: " + evacuating},
		{name: "the target pod of a migration", pod: launcherPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-b"; p.UID = "pod-2" }),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue,
				func(v *kubevirt.VirtualMachineInstance) { v.Status.ActivePods["pod-2"] = "node-b" }),
			wantMessage: "Eviction request for target Pod"},
		{name: "dry run marks nothing", pod: launcherPod(), dryRun: true,
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue),
			wantMessage: evacuating},
		{name: "marking fails: refused, retry later", pod: launcherPod(), markErr: errors.New("conflict"),
			vmi:         instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue),
			wantMessage: "kubevirt failed marking the vmi for eviction: conflict"},
		// Attacks: pods dressed as launchers get nothing from the instance.
		{name: "a pod with the launcher's label and annotation that is not the instance's", pod: launcherPod(func(p *corev1.Pod) { p.UID = "forged" }),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue), wantAllowed: true},
		{name: "not a launcher", pod: launcherPod(func(p *corev1.Pod) { p.Labels = nil }),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue), wantAllowed: true},
		{name: "a completed launcher", pod: launcherPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			vmi: instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue), wantAllowed: true},
		{name: "no instance", pod: launcherPod(), wantAllowed: true},
		{name: "no pod", wantAllowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := fakePods{}
			if tt.pod != nil {
				pods[tt.pod.Namespace+"/"+tt.pod.Name] = tt.pod
			}
			instances := &fakeInstances{vmis: map[string]*kubevirt.VirtualMachineInstance{}, marked: map[string]string{}, markErr: tt.markErr}
			if tt.vmi != nil {
				instances.vmis["ns/vm1"] = tt.vmi
			}
			a := New(pods, instances, func() kubevirt.EvictionStrategy { return tt.cluster })
			req := &admissionv1.AdmissionRequest{Namespace: "ns", Name: "virt-launcher-vm1-abcde", DryRun: ptr.To(tt.dryRun),
				Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"virt-launcher-vm1-abcde"}}`)}}
			resp := a.Admit(context.Background(), req)
			assert.Equal(t, tt.wantAllowed, resp.Allowed)
			if !tt.wantAllowed {
				require.NotNil(t, resp.Result)
				assert.Equal(t, int32(http.StatusTooManyRequests), resp.Result.Code)
				assert.Equal(t, tt.wantMessage, resp.Result.Message)
			}
			if tt.wantMarked != "" {
				assert.Equal(t, map[string]string{"ns/vm1": tt.wantMarked}, instances.marked)
			} else {
				assert.Empty(t, instances.marked)
			}
			if tt.dryRun {
				assert.Equal(t, 1, instances.dryRuns)
			}
		})
	}
}

func TestDryRunInDeleteOptions(t *testing.T) {
	req := &admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: []byte(`{"kind":"Eviction","deleteOptions":{"dryRun":["All"]}}`)}}
	assert.True(t, isDryRun(req))
	req.Object.Raw = []byte(`{"kind":"Eviction"}`)
	assert.False(t, isDryRun(req))
}

func TestServeHTTP(t *testing.T) {
	instances := &fakeInstances{vmis: map[string]*kubevirt.VirtualMachineInstance{
		"ns/vm1": instance(strategy(kubevirt.EvictionStrategyLiveMigrate), corev1.ConditionTrue)}, marked: map[string]string{}}
	a := New(fakePods{"ns/virt-launcher-vm1-abcde": launcherPod()}, instances, func() kubevirt.EvictionStrategy { return "" })
	review := func(resource, sub string) admissionv1.AdmissionReview {
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "req-1", Namespace: "ns", Name: "virt-launcher-vm1-abcde",
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: resource}, SubResource: sub}})
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		require.Equal(t, http.StatusOK, rec.Code)
		var out admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		return out
	}
	out := review("pods", "eviction")
	assert.Equal(t, "admission.k8s.io/v1", out.APIVersion)
	assert.Equal(t, "req-1", string(out.Response.UID))
	assert.False(t, out.Response.Allowed)
	assert.Equal(t, "node-a", instances.marked["ns/vm1"])

	// Anything but an eviction of a pod passes untouched.
	delete(instances.marked, "ns/vm1")
	assert.True(t, review("pods", "").Response.Allowed)
	assert.True(t, review("services", "eviction").Response.Allowed)
	assert.Empty(t, instances.marked)

	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte("not json"))))
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
