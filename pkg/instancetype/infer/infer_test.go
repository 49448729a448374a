package infer

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// objects is a Reader of claims, VolumeSnapshots, DataVolumes and DataSources, by
// "resource namespace/name" (the keys of read); forbidden ones answer 403, broken ones fail,
// missing ones 404, and every read is counted.
type objects struct {
	claims, snapshots map[string]map[string]string
	dataVolumes       map[string]*cdi.DataVolume
	dataSources       map[string]*cdi.DataSource
	forbidden, broken map[string]bool
	reads             map[string]int
}

// read counts the read of resource namespace/name and says whether it fails.
func (o *objects) read(path *field.Path, resource, namespace, name string) (string, error) {
	if o.reads == nil {
		o.reads = map[string]int{}
	}
	key := resource + " " + namespace + "/" + name
	o.reads[key]++
	switch {
	case o.forbidden[key]:
		return key, apierrors.NewForbidden(kubevirt.Resource("virtualmachines"), "vm", field.Forbidden(path, "may not get "+resource))
	case o.broken[key]:
		return key, errors.New("connection refused")
	}
	return key, nil
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (o *objects) ClaimLabels(_ context.Context, path *field.Path, namespace, name string) (map[string]string, error) {
	key, err := o.read(path, "persistentvolumeclaims", namespace, name)
	if err != nil {
		return nil, err
	}
	labels, ok := o.claims[key]
	if !ok {
		return nil, notFound("persistentvolumeclaims", name)
	}
	return labels, nil
}

func (o *objects) SnapshotLabels(_ context.Context, path *field.Path, namespace, name string) (map[string]string, error) {
	key, err := o.read(path, "volumesnapshots", namespace, name)
	if err != nil {
		return nil, err
	}
	labels, ok := o.snapshots[key]
	if !ok {
		return nil, notFound("volumesnapshots", name)
	}
	return labels, nil
}

func (o *objects) DataVolume(_ context.Context, path *field.Path, namespace, name string) (*cdi.DataVolume, error) {
	key, err := o.read(path, "datavolumes", namespace, name)
	if err != nil {
		return nil, err
	}
	dv, ok := o.dataVolumes[key]
	if !ok {
		return nil, notFound("datavolumes", name)
	}
	return dv, nil
}

func (o *objects) DataSource(_ context.Context, path *field.Path, namespace, name string) (*cdi.DataSource, error) {
	key, err := o.read(path, "datasources", namespace, name)
	if err != nil {
		return nil, err
	}
	ds, ok := o.dataSources[key]
	if !ok {
		return nil, notFound("datasources", name)
	}
	return ds, nil
}

// standalone is the Reader of a virt-api without a cluster.
type standalone struct{}

func (standalone) ClaimLabels(_ context.Context, path *field.Path, _, name string) (map[string]string, error) {
	return nil, field.Invalid(path, name, "no claims here")
}

func (standalone) SnapshotLabels(_ context.Context, path *field.Path, _, name string) (map[string]string, error) {
	return nil, field.Invalid(path, name, "no VolumeSnapshots here")
}

func (standalone) DataVolume(_ context.Context, path *field.Path, _, name string) (*cdi.DataVolume, error) {
	return nil, field.Invalid(path, name, "no DataVolumes here")
}

func (standalone) DataSource(_ context.Context, path *field.Path, _, name string) (*cdi.DataSource, error) {
	return nil, field.Invalid(path, name, "no DataSources here")
}

var (
	labelled = map[string]string{
		"instancetype.kubevirt.io/default-instancetype":      "u1.medium",
		"instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
		"instancetype.kubevirt.io/default-preference":        "fedora",
	}
	onlyPreference = map[string]string{"instancetype.kubevirt.io/default-preference": "fedora"}
	reader         = func() *objects {
		return &objects{claims: map[string]map[string]string{"persistentvolumeclaims ns/root": labelled, "persistentvolumeclaims ns/bare": {},
			"persistentvolumeclaims ns/pref-only": onlyPreference,
			"persistentvolumeclaims ns/nokind":    {"instancetype.kubevirt.io/default-instancetype": "u1.small"}},
			forbidden: map[string]bool{"persistentvolumeclaims ns/secret": true}, broken: map[string]bool{"persistentvolumeclaims ns/flaky": true}}
	}
	ignore = ptr.To(kubevirt.IgnoreInferFromVolumeFailure)
	reject = ptr.To(kubevirt.RejectInferFromVolumeFailure)
)

// vmInferring is a VM with claim volumes (root, bare, missing, secret, flaky, pref-only, nokind), a
// container disk (disk) and 1Gi of memory, whose instance type and preference infer from the
// given volumes ("" for no matcher) under the given policies.
func vmInferring(itVolume string, itPolicy *kubevirt.InferFromVolumeFailurePolicy, prefVolume string, prefPolicy *kubevirt.InferFromVolumeFailurePolicy) *kubevirt.VirtualMachine {
	vm := &kubevirt.VirtualMachine{}
	vm.Name, vm.Namespace = "vm", "ns"
	vm.Spec.Template = &kubevirt.VirtualMachineInstanceTemplateSpec{}
	vm.Spec.Template.Spec.Domain.Memory = &kubevirt.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
	for _, claim := range []string{"root", "bare", "missing", "secret", "flaky", "pref-only", "nokind"} {
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, kubevirt.Volume{Name: claim, VolumeSource: kubevirt.VolumeSource{
			PersistentVolumeClaim: &kubevirt.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}})
	}
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, kubevirt.Volume{Name: "disk",
		VolumeSource: kubevirt.VolumeSource{ContainerDisk: &kubevirt.ContainerDiskSource{Image: "example/disk"}}})
	if itVolume != "" {
		vm.Spec.Instancetype = &kubevirt.InstancetypeMatcher{InferFromVolume: itVolume, InferFromVolumeFailurePolicy: itPolicy}
	}
	if prefVolume != "" {
		vm.Spec.Preference = &kubevirt.PreferenceMatcher{InferFromVolume: prefVolume, InferFromVolumeFailurePolicy: prefPolicy}
	}
	return vm
}

func causes(err error) []string {
	var fields []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

func TestVirtualMachine(t *testing.T) {
	oneGi := &kubevirt.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
	for _, tc := range []struct {
		name string
		vm   *kubevirt.VirtualMachine
		// wantIt and wantPref are the matchers after inference; wantMemory the template's.
		wantIt      *kubevirt.InstancetypeMatcher
		wantPref    *kubevirt.PreferenceMatcher
		wantMemory  *kubevirt.Memory
		wantDropped bool
		// wantInvalid are the fields of a 422; wantStatus an error's other status code.
		wantInvalid []string
		wantMessage string
		wantStatus  int32
	}{{
		name:       "both from a labelled claim; the preference's kind defaults to the cluster-wide one",
		vm:         vmInferring("root", nil, "root", nil),
		wantIt:     &kubevirt.InstancetypeMatcher{Name: "u1.medium", Kind: "VirtualMachineInstancetype"},
		wantPref:   &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"},
		wantMemory: oneGi,
	}, {
		name:       "the instance type's kind defaults to the cluster-wide one",
		vm:         vmInferring("nokind", reject, "", nil),
		wantIt:     &kubevirt.InstancetypeMatcher{Name: "u1.small", Kind: "virtualmachineclusterinstancetype"},
		wantMemory: oneGi,
	}, {
		name:       "an instance type inferred under Ignore takes the template's memory",
		vm:         vmInferring("root", ignore, "root", ignore),
		wantIt:     &kubevirt.InstancetypeMatcher{Name: "u1.medium", Kind: "VirtualMachineInstancetype"},
		wantPref:   &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"},
		wantMemory: nil,
	}, {
		name: "a matcher without inferFromVolume is left alone",
		vm: func() *kubevirt.VirtualMachine {
			vm := vmInferring("", nil, "root", nil)
			vm.Spec.Instancetype = &kubevirt.InstancetypeMatcher{Name: "mine"}
			return vm
		}(),
		wantIt:     &kubevirt.InstancetypeMatcher{Name: "mine"},
		wantPref:   &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"},
		wantMemory: oneGi,
	}, {
		name:        "a claim without labels, Reject",
		vm:          vmInferring("bare", nil, "bare", reject),
		wantInvalid: []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"},
		wantMessage: "has no label instancetype.kubevirt.io/default-instancetype",
	}, {
		name:        "a claim without labels, Ignore: both matchers dropped, the memory kept",
		vm:          vmInferring("bare", ignore, "bare", ignore),
		wantMemory:  oneGi,
		wantDropped: true,
	}, {
		name:        "a claim with a preference only, Ignore: the instance type dropped",
		vm:          vmInferring("pref-only", ignore, "pref-only", nil),
		wantPref:    &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"},
		wantMemory:  oneGi,
		wantDropped: true,
	}, {
		name:        "a missing claim, Reject",
		vm:          vmInferring("missing", nil, "", nil),
		wantInvalid: []string{"spec.instancetype.inferFromVolume"},
		wantMessage: "the claim missing of volume missing does not exist",
	}, {
		name:        "a missing claim, Ignore",
		vm:          vmInferring("missing", ignore, "missing", ignore),
		wantMemory:  oneGi,
		wantDropped: true,
	}, {
		name:        "a volume that is no claim, Reject",
		vm:          vmInferring("", nil, "disk", nil),
		wantInvalid: []string{"spec.preference.inferFromVolume"},
		wantMessage: "only persistentVolumeClaim and dataVolume volumes",
	}, {
		name:        "a volume that is no claim, Ignore",
		vm:          vmInferring("disk", ignore, "", nil),
		wantMemory:  oneGi,
		wantDropped: true,
	}, {
		name:        "no such volume is refused under Ignore too",
		vm:          vmInferring("nope", ignore, "nope", nil),
		wantInvalid: []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"},
		wantMessage: "no volume of this name",
	}, {
		name: "name, kind and an unknown policy with inferFromVolume",
		vm: func() *kubevirt.VirtualMachine {
			vm := vmInferring("root", ptr.To(kubevirt.InferFromVolumeFailurePolicy("Maybe")), "root", nil)
			vm.Spec.Instancetype.Name, vm.Spec.Preference.Kind = "u1.small", "VirtualMachinePreference"
			return vm
		}(),
		wantInvalid: []string{"spec.instancetype.name", "spec.instancetype.inferFromVolumeFailurePolicy", "spec.preference.kind"},
	}, {
		name:       "a claim the user may not read is a 403, under Ignore too",
		vm:         vmInferring("secret", ignore, "", nil),
		wantStatus: 403,
	}, {
		name:       "a read that fails is a 500",
		vm:         vmInferring("flaky", ignore, "", nil),
		wantStatus: 500,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			result, err := VirtualMachine(context.Background(), tc.vm, reader())
			switch {
			case tc.wantInvalid != nil:
				require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
				assert.ElementsMatch(t, tc.wantInvalid, causes(err))
				assert.Contains(t, err.Error(), tc.wantMessage)
				return
			case tc.wantStatus != 0:
				require.Error(t, err)
				status, ok := err.(apierrors.APIStatus)
				require.True(t, ok, "want an API status, got %v", err)
				assert.Equal(t, tc.wantStatus, status.Status().Code, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantIt, tc.vm.Spec.Instancetype)
			assert.Equal(t, tc.wantPref, tc.vm.Spec.Preference)
			assert.Equal(t, tc.wantMemory, tc.vm.Spec.Template.Spec.Domain.Memory)
			assert.Equal(t, tc.wantDropped, result.Dropped)
		})
	}
}

func TestVirtualMachineReadsAClaimOnce(t *testing.T) {
	r := reader()
	_, err := VirtualMachine(context.Background(), vmInferring("root", nil, "root", nil), r)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"persistentvolumeclaims ns/root": 1}, r.reads, "one authorization and read for both matchers")
}

func TestVirtualMachineStandalone(t *testing.T) {
	_, err := VirtualMachine(context.Background(), vmInferring("root", ignore, "", nil), standalone{})
	require.True(t, apierrors.IsInvalid(err), "a reader's field error is the VM's 422, whatever the policy: got %v", err)
	assert.Equal(t, []string{"spec.instancetype.inferFromVolume"}, causes(err))

	_, err = VirtualMachine(context.Background(), vmInferring("root", nil, "root", nil), standalone{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Equal(t, []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"}, causes(err),
		"each matcher's own error, not the first one's twice")

	vm := vmInferring("disk", ignore, "", nil)
	_, err = VirtualMachine(context.Background(), vm, standalone{})
	require.NoError(t, err, "nothing to read")
	assert.Nil(t, vm.Spec.Instancetype)
}

func TestWanted(t *testing.T) {
	assert.False(t, Wanted(vmInferring("", nil, "", nil)))
	assert.True(t, Wanted(vmInferring("root", nil, "", nil)))
	assert.True(t, Wanted(vmInferring("", nil, "root", nil)))
}

func TestForgetMerged(t *testing.T) {
	stored := vmInferring("", nil, "", nil)
	stored.Spec.Instancetype = &kubevirt.InstancetypeMatcher{Name: "u1.medium", Kind: "virtualmachineclusterinstancetype"}
	stored.Spec.Preference = &kubevirt.PreferenceMatcher{Name: "fedora", Kind: "virtualmachineclusterpreference"}

	reapplied := stored.DeepCopy()
	reapplied.Spec.Instancetype.InferFromVolume, reapplied.Spec.Preference.InferFromVolume = "root", "root"
	ForgetMerged(reapplied, stored)
	assert.Equal(t, &kubevirt.InstancetypeMatcher{InferFromVolume: "root"}, reapplied.Spec.Instancetype)
	assert.Equal(t, &kubevirt.PreferenceMatcher{InferFromVolume: "root"}, reapplied.Spec.Preference)
	_, err := VirtualMachine(context.Background(), reapplied, reader())
	require.NoError(t, err, "inferred again")

	written := stored.DeepCopy()
	written.Spec.Instancetype = &kubevirt.InstancetypeMatcher{Name: "u1.large", Kind: "virtualmachineclusterinstancetype", InferFromVolume: "root"}
	ForgetMerged(written, stored)
	assert.Equal(t, "u1.large", written.Spec.Instancetype.Name, "a name the update changes is the writer's")
	_, err = VirtualMachine(context.Background(), written, reader())
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.ElementsMatch(t, []string{"spec.instancetype.name", "spec.instancetype.kind"}, causes(err), "the matcher is the writer's")

	created := vmInferring("root", nil, "", nil)
	ForgetMerged(created, nil)
	assert.Equal(t, &kubevirt.InstancetypeMatcher{InferFromVolume: "root"}, created.Spec.Instancetype)
}
