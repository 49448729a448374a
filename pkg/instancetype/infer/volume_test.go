package infer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

var (
	// instancetypeOnly names an instance type and no preference.
	instancetypeOnly = map[string]string{"instancetype.kubevirt.io/default-instancetype": "u1.large"}
	// fromPVC names other ones than labelled, to tell which object they came from.
	fromPVC = map[string]string{
		"instancetype.kubevirt.io/default-instancetype": "u1.small",
		"instancetype.kubevirt.io/default-preference":   "rhel",
	}
	fromSnapshot = map[string]string{
		"instancetype.kubevirt.io/default-instancetype": "cx1.large",
		"instancetype.kubevirt.io/default-preference":   "windows",
	}
)

// cluster holds DataSources, DataVolumes, claims and VolumeSnapshots of the namespaces ns (the
// VM's) and os-images:
//
//	DataSources: ns/fedora, os-images/fedora (labelled), os-images/from-pvc (→ claim fedora-root),
//	os-images/from-snapshot (→ snapshot fedora-snap), os-images/bare (→ claim plain),
//	os-images/chained (→ another DataSource), os-images/to-missing (→ a missing claim),
//	os-images/secret (forbidden), os-images/flaky (broken), os-images/to-secret (→ forbidden claim),
//	os-images/to-secret-snap (→ forbidden snapshot).
//	DataVolumes: ns/labelled, ns/from-ds (→ DataSource os-images/fedora), ns/half (an instance
//	type label, → claim ns/root), ns/http (an import), ns/secret (forbidden).
//	Claims: ns/root, ns/gone (a DataVolume's, which is gone), os-images/fedora-root, os-images/plain.
func cluster() *objects {
	o := reader()
	o.claims["persistentvolumeclaims ns/gone"] = labelled
	o.claims["persistentvolumeclaims os-images/fedora-root"] = fromPVC
	o.claims["persistentvolumeclaims os-images/plain"] = map[string]string{}
	o.claims["persistentvolumeclaims os-images/secret"] = labelled
	o.forbidden["persistentvolumeclaims os-images/secret"] = true
	o.snapshots = map[string]map[string]string{"volumesnapshots os-images/fedora-snap": fromSnapshot,
		"volumesnapshots ns/snap": fromSnapshot, "volumesnapshots os-images/secret": fromSnapshot}
	o.forbidden["volumesnapshots os-images/secret"] = true
	ds := func(ns, name string, labels map[string]string, source cdi.DataSourceSource) {
		o.dataSources["datasources "+ns+"/"+name] = &cdi.DataSource{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: cdi.DataSourceSpec{Source: source}}
	}
	o.dataSources = map[string]*cdi.DataSource{}
	ds("ns", "fedora", labelled, cdi.DataSourceSource{})
	ds("os-images", "fedora", labelled, cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "plain"}})
	ds("os-images", "from-pvc", nil, cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "fedora-root"}})
	ds("os-images", "from-snapshot", nil, cdi.DataSourceSource{Snapshot: &cdi.DataVolumeSourceSnapshot{Name: "fedora-snap"}})
	ds("os-images", "bare", map[string]string{"other": "label"}, cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "plain"}})
	ds("os-images", "chained", nil, cdi.DataSourceSource{DataSource: &cdi.DataSourceRefSourceDataSource{Namespace: "os-images", Name: "fedora"}})
	ds("os-images", "to-missing", nil, cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "missing"}})
	ds("os-images", "to-secret", nil, cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "secret"}})
	ds("os-images", "to-secret-snap", nil, cdi.DataSourceSource{Snapshot: &cdi.DataVolumeSourceSnapshot{Namespace: "os-images", Name: "secret"}})
	ds("os-images", "secret", labelled, cdi.DataSourceSource{})
	o.forbidden["datasources os-images/secret"] = true
	o.broken["datasources os-images/flaky"] = true
	dv := func(name string, labels map[string]string, spec cdi.DataVolumeSpec) {
		o.dataVolumes["datavolumes ns/"+name] = &cdi.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}, Spec: spec}
	}
	o.dataVolumes = map[string]*cdi.DataVolume{}
	dv("labelled", labelled, cdi.DataVolumeSpec{Source: &cdi.DataVolumeSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "fedora-root"}}})
	dv("from-ds", map[string]string{"app": "x"}, cdi.DataVolumeSpec{SourceRef: &cdi.DataVolumeSourceRef{Kind: "DataSource", Namespace: ptr.To("os-images"), Name: "fedora"}})
	dv("half", instancetypeOnly, cdi.DataVolumeSpec{Source: &cdi.DataVolumeSource{PVC: &cdi.DataVolumeSourcePVC{Name: "root"}}})
	dv("http", nil, cdi.DataVolumeSpec{Source: &cdi.DataVolumeSource{HTTP: &cdi.DataVolumeSourceHTTP{URL: "https://example.org/disk.img"}}})
	dv("secret", labelled, cdi.DataVolumeSpec{})
	o.forbidden["datavolumes ns/secret"] = true
	return o
}

// vmBootingDataVolume is a VM with a dataVolume volume "boot" of the DataVolume dv, of a template
// of that name with spec when spec is not nil, inferring both matchers from it under policy.
func vmBootingDataVolume(dv string, spec *cdiv1beta1.DataVolumeSpec, policy *kubevirt.InferFromVolumeFailurePolicy) *kubevirt.VirtualMachine {
	vm := vmInferring("boot", policy, "boot", policy)
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, kubevirt.Volume{Name: "boot",
		VolumeSource: kubevirt.VolumeSource{DataVolume: &kubevirt.DataVolumeSource{Name: dv}}})
	if spec != nil {
		vm.Spec.DataVolumeTemplates = []kubevirt.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: dv}, Spec: *spec}}
	}
	return vm
}

func fromDataSource(namespace *string, name string) *cdiv1beta1.DataVolumeSpec {
	return &cdiv1beta1.DataVolumeSpec{SourceRef: &cdiv1beta1.DataVolumeSourceRef{Kind: "DataSource", Namespace: namespace, Name: name}}
}

func cloning(namespace, name string) *cdiv1beta1.DataVolumeSpec {
	return &cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{PVC: &cdiv1beta1.DataVolumeSourcePVC{Namespace: namespace, Name: name}}}
}

func fromVolumeSnapshot(namespace, name string) *cdiv1beta1.DataVolumeSpec {
	return &cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{Snapshot: &cdiv1beta1.DataVolumeSourceSnapshot{Namespace: namespace, Name: name}}}
}

func TestVirtualMachineFromDataVolumes(t *testing.T) {
	medium := &kubevirt.InstancetypeMatcher{Name: "u1.medium", Kind: "VirtualMachineInstancetype"}
	fedora := &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"}
	small := &kubevirt.InstancetypeMatcher{Name: "u1.small", Kind: "virtualmachineclusterinstancetype"}
	rhel := &kubevirt.PreferenceMatcher{Name: "rhel", Kind: "virtualmachineclusterpreference"}
	for _, tc := range []struct {
		name     string
		vm       *kubevirt.VirtualMachine
		wantIt   *kubevirt.InstancetypeMatcher
		wantPref *kubevirt.PreferenceMatcher
		// wantDropped: both matchers removed under Ignore.
		wantDropped bool
		// wantInvalid: a 422 on both inferFromVolume fields with this message.
		wantInvalid string
		// wantStatus: an error of this status code (and message).
		wantStatus  int32
		wantMessage string
		wantReads   []string
	}{{
		name:   "a template from a labelled DataSource of the VM's namespace: the DataSource's labels",
		vm:     vmBootingDataVolume("root-dv", fromDataSource(nil, "fedora"), nil),
		wantIt: medium, wantPref: fedora,
		wantReads: []string{"datasources ns/fedora"},
	}, {
		name:   "a labelled DataSource of another namespace: its labels, not its claim's",
		vm:     vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "fedora"), nil),
		wantIt: medium, wantPref: fedora,
		wantReads: []string{"datasources os-images/fedora"},
	}, {
		name:   "a DataSource without labels: its claim's, in the DataSource's namespace",
		vm:     vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "from-pvc"), nil),
		wantIt: small, wantPref: rhel,
		wantReads: []string{"datasources os-images/from-pvc", "persistentvolumeclaims os-images/fedora-root"},
	}, {
		name:      "a DataSource without labels: its VolumeSnapshot's, in the DataSource's namespace when it names none",
		vm:        vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "from-snapshot"), nil),
		wantIt:    &kubevirt.InstancetypeMatcher{Name: "cx1.large", Kind: "virtualmachineclusterinstancetype"},
		wantPref:  &kubevirt.PreferenceMatcher{Name: "windows", Kind: "virtualmachineclusterpreference"},
		wantReads: []string{"datasources os-images/from-snapshot", "volumesnapshots os-images/fedora-snap"},
	}, {
		name:        "a DataSource and its claim without labels, Reject",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "bare"), nil),
		wantInvalid: "the claim os-images/plain of the DataSource os-images/bare of the DataVolume template root-dv of volume boot has no label instancetype.kubevirt.io/default-instancetype",
	}, {
		name:        "a DataSource and its claim without labels, Ignore",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "bare"), ignore),
		wantDropped: true,
	}, {
		name:        "a DataSource of another DataSource is not followed",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "chained"), nil),
		wantInvalid: "the DataSource os-images/chained of the DataVolume template root-dv of volume boot has no label instancetype.kubevirt.io/default-instancetype and its source is no claim or VolumeSnapshot",
	}, {
		name:        "a missing DataSource, Reject",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(nil, "nope"), nil),
		wantInvalid: "the DataSource nope of the DataVolume template root-dv of volume boot does not exist",
	}, {
		name:        "a missing DataSource, Ignore",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(nil, "nope"), ignore),
		wantDropped: true,
	}, {
		name:        "a DataSource's missing claim, Reject",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "to-missing"), nil),
		wantInvalid: "the claim os-images/missing of the DataSource os-images/to-missing of the DataVolume template root-dv of volume boot does not exist",
	}, {
		name:        "a DataSource's missing claim, Ignore",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "to-missing"), ignore),
		wantDropped: true,
	}, {
		name:   "a template cloning a claim: the claim's labels",
		vm:     vmBootingDataVolume("root-dv", cloning("os-images", "fedora-root"), nil),
		wantIt: small, wantPref: rhel,
		wantReads: []string{"persistentvolumeclaims os-images/fedora-root"},
	}, {
		name:   "a template cloning a claim without a namespace: the VM's",
		vm:     vmBootingDataVolume("root-dv", cloning("", "root"), nil),
		wantIt: medium, wantPref: fedora,
	}, {
		name:        "a template cloning a missing claim, Reject",
		vm:          vmBootingDataVolume("root-dv", cloning("ns", "missing"), nil),
		wantInvalid: "the claim missing of the DataVolume template root-dv of volume boot does not exist",
	}, {
		name:        "a template cloning a missing claim, Ignore",
		vm:          vmBootingDataVolume("root-dv", cloning("ns", "missing"), ignore),
		wantDropped: true,
	}, {
		name:      "a template from a VolumeSnapshot: its labels",
		vm:        vmBootingDataVolume("root-dv", fromVolumeSnapshot("ns", "snap"), nil),
		wantIt:    &kubevirt.InstancetypeMatcher{Name: "cx1.large", Kind: "virtualmachineclusterinstancetype"},
		wantPref:  &kubevirt.PreferenceMatcher{Name: "windows", Kind: "virtualmachineclusterpreference"},
		wantReads: []string{"volumesnapshots ns/snap"},
	}, {
		name: "a template's own labels are not read, nor is its existing DataVolume",
		vm: func() *kubevirt.VirtualMachine {
			vm := vmBootingDataVolume("labelled", &cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{
				HTTP: &cdiv1beta1.DataVolumeSourceHTTP{URL: "https://example.org/disk.img"}}}, nil)
			vm.Spec.DataVolumeTemplates[0].Labels = labelled
			return vm
		}(),
		wantInvalid: "the DataVolume template labelled of volume boot is made from no claim, VolumeSnapshot or DataSource to infer from",
	}, {
		name: "a template's sourceRef of another kind",
		vm: vmBootingDataVolume("root-dv", &cdiv1beta1.DataVolumeSpec{SourceRef: &cdiv1beta1.DataVolumeSourceRef{
			Kind: "ImageStream", Name: "fedora"}}, nil),
		wantInvalid: "the DataVolume template root-dv of volume boot has a sourceRef of kind ImageStream: only a DataSource is read",
	}, {
		name:        "a template made from nothing to read, Ignore",
		vm:          vmBootingDataVolume("root-dv", &cdiv1beta1.DataVolumeSpec{}, ignore),
		wantDropped: true,
	}, {
		name:   "a DataVolume without a template: its labels",
		vm:     vmBootingDataVolume("labelled", nil, nil),
		wantIt: medium, wantPref: fedora,
		wantReads: []string{"datavolumes ns/labelled"},
	}, {
		name:   "a DataVolume without the labels: what its spec names",
		vm:     vmBootingDataVolume("from-ds", nil, nil),
		wantIt: medium, wantPref: fedora,
		wantReads: []string{"datavolumes ns/from-ds", "datasources os-images/fedora"},
	}, {
		name:   "a DataVolume with one label: that one from it, the other from its spec's claim",
		vm:     vmBootingDataVolume("half", nil, nil),
		wantIt: &kubevirt.InstancetypeMatcher{Name: "u1.large", Kind: "virtualmachineclusterinstancetype"}, wantPref: fedora,
		wantReads: []string{"datavolumes ns/half", "persistentvolumeclaims ns/root"},
	}, {
		name:        "a DataVolume without labels made from nothing to read, Reject",
		vm:          vmBootingDataVolume("http", nil, nil),
		wantInvalid: "the DataVolume http of volume boot has no label instancetype.kubevirt.io/default-instancetype and is made from no claim",
	}, {
		name:   "no DataVolume: the claim it left",
		vm:     vmBootingDataVolume("gone", nil, nil),
		wantIt: medium, wantPref: fedora,
		wantReads: []string{"datavolumes ns/gone", "persistentvolumeclaims ns/gone"},
	}, {
		name:        "no DataVolume, and the claim of its name without labels",
		vm:          vmBootingDataVolume("bare", nil, nil),
		wantInvalid: "the claim bare (there is no DataVolume bare) of volume boot has no label instancetype.kubevirt.io/default-instancetype",
	}, {
		name:        "no DataVolume nor claim, Reject",
		vm:          vmBootingDataVolume("nope", nil, nil),
		wantInvalid: "neither the DataVolume nope of volume boot nor a claim of its name exists",
	}, {
		name:        "no DataVolume nor claim, Ignore",
		vm:          vmBootingDataVolume("nope", nil, ignore),
		wantDropped: true,
	}, {
		name:        "a DataVolume the user may not get is a 403, under Ignore too",
		vm:          vmBootingDataVolume("secret", nil, ignore),
		wantStatus:  403,
		wantMessage: "may not get datavolumes",
	}, {
		name:        "a DataSource the user may not get",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "secret"), ignore),
		wantStatus:  403,
		wantMessage: "may not get datasources",
	}, {
		name:        "a DataSource's claim the user may not get",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "to-secret"), ignore),
		wantStatus:  403,
		wantMessage: "may not get persistentvolumeclaims",
	}, {
		name:        "a DataSource's VolumeSnapshot the user may not get",
		vm:          vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "to-secret-snap"), ignore),
		wantStatus:  403,
		wantMessage: "may not get volumesnapshots",
	}, {
		name:        "a template's VolumeSnapshot the user may not get",
		vm:          vmBootingDataVolume("root-dv", fromVolumeSnapshot("os-images", "secret"), nil),
		wantStatus:  403,
		wantMessage: "may not get volumesnapshots",
	}, {
		name:       "a DataSource that cannot be read is a 500",
		vm:         vmBootingDataVolume("root-dv", fromDataSource(ptr.To("os-images"), "flaky"), ignore),
		wantStatus: 500,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cluster()
			result, err := VirtualMachine(context.Background(), tc.vm, r)
			switch {
			case tc.wantInvalid != "":
				require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
				assert.ElementsMatch(t, []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"}, causes(err))
				assert.Contains(t, err.Error(), tc.wantInvalid)
				return
			case tc.wantStatus != 0:
				require.Error(t, err)
				status, ok := err.(apierrors.APIStatus)
				require.True(t, ok, "want an API status, got %v", err)
				assert.Equal(t, tc.wantStatus, status.Status().Code, err.Error())
				assert.Contains(t, err.Error(), tc.wantMessage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantIt, tc.vm.Spec.Instancetype)
			assert.Equal(t, tc.wantPref, tc.vm.Spec.Preference)
			assert.Equal(t, tc.wantDropped, result.Dropped)
			if tc.wantReads != nil {
				reads := map[string]int{}
				for _, key := range tc.wantReads {
					reads[key] = 1
				}
				assert.Equal(t, reads, r.reads, "each object read once, for both matchers")
			}
		})
	}
}

func TestVirtualMachineFromDataVolumesStandalone(t *testing.T) {
	for _, vm := range []*kubevirt.VirtualMachine{
		vmBootingDataVolume("root-dv", fromDataSource(nil, "fedora"), ignore),
		vmBootingDataVolume("labelled", nil, ignore),
	} {
		_, err := VirtualMachine(context.Background(), vm, standalone{})
		require.True(t, apierrors.IsInvalid(err), "a reader's field error is the VM's 422, whatever the policy: got %v", err)
		assert.Equal(t, []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"}, causes(err))
	}
}
