package vm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	instancetypefake "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned/fake"
)

func withInstancetype(vm *v1.VirtualMachine) *v1.VirtualMachine {
	vm.Spec.Instancetype = &v1.InstancetypeMatcher{Name: "u1.small"}
	return vm
}

var u1small = &instancetypev1beta1.VirtualMachineClusterInstancetype{
	ObjectMeta: metav1.ObjectMeta{Name: "u1.small", UID: "it-uid", Generation: 3},
	Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU:    instancetypev1beta1.CPUInstancetype{Guest: 1},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("2Gi")},
	},
}

// withInstancetypes turns revisions on, with the given objects in instancetype.kubevirt.io;
// expansions records the VMs expand-spec was asked for, and expand gives them the instance
// type's memory as virt-api would.
func (f *fixture) withInstancetypes(objs ...runtime.Object) (*kubefake.Clientset, *[]string) {
	kube := kubefake.NewSimpleClientset()
	var expansions []string
	f.c.EnableInstancetypes(kube, instancetypefake.NewSimpleClientset(objs...), func(ctx context.Context, namespace, name string) (*v1.VirtualMachine, error) {
		expansions = append(expansions, namespace+"/"+name)
		vm, err := f.kv.KubevirtV1().VirtualMachines(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if vm.Status.InstancetypeRef == nil {
			return nil, errors.New("expanded before the revision was stored")
		}
		vm.Spec.Instancetype = nil
		vm.Spec.Template.Spec.Domain.Memory = &v1.Memory{Guest: ptr.To(resource.MustParse("2Gi"))}
		vm.Spec.Template.Spec.Domain.CPU = &v1.CPU{Sockets: 1, Cores: 1, Threads: 1}
		return vm, nil
	})
	return kube, &expansions
}

func TestInstancetypeRevision(t *testing.T) {
	f := newFixture(t, withInstancetype(newVM(v1.RunStrategyAlways)), nil)
	kube, expansions := f.withInstancetypes(u1small)

	require.NoError(t, f.sync())
	assert.Nil(t, f.vmi(), "no instance before the revision is stored")
	ref := f.vm().Status.InstancetypeRef
	require.NotNil(t, ref)
	assert.Equal(t, "VirtualMachineClusterInstancetype", ref.Kind, "the default kind")
	assert.Equal(t, "u1.small", ref.Name)
	require.NotNil(t, ref.ControllerRevisionRef)
	assert.Equal(t, "vm1-u1.small-it-uid-3", ref.ControllerRevisionRef.Name)

	cr, err := kube.AppsV1().ControllerRevisions("ns").Get(context.Background(), ref.ControllerRevisionRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "vm-uid", string(cr.OwnerReferences[0].UID), "owned by the VM")
	var stored instancetypev1beta1.VirtualMachineClusterInstancetype
	require.NoError(t, json.Unmarshal(cr.Data.Raw, &stored))
	assert.Equal(t, "instancetype.kubevirt.io/v1beta1", stored.APIVersion)
	assert.Equal(t, "VirtualMachineClusterInstancetype", stored.Kind)
	assert.Equal(t, "2Gi", stored.Spec.Memory.Guest.String())
	assert.Contains(t, f.events(), "Normal SuccessfulCreateControllerRevision Created ControllerRevision vm1-u1.small-it-uid-3 of VirtualMachineClusterInstancetype u1.small")

	f.refresh()
	require.NoError(t, f.sync())
	vmi := f.vmi()
	require.NotNil(t, vmi, "started once the revision is recorded")
	assert.Equal(t, "2Gi", vmi.Spec.Domain.Memory.Guest.String(), "the instance is made from the expanded VM")
	assert.Equal(t, []string{"ns/vm1"}, *expansions)
	assert.Equal(t, "vm-uid", string(vmi.OwnerReferences[0].UID))
	var creates int
	for _, a := range kube.Actions() {
		if a.GetVerb() == "create" {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "the revision is made once")
}

func TestInstancetypeRevisionPinned(t *testing.T) {
	vm := withInstancetype(newVM(v1.RunStrategyHalted))
	vm.Spec.Instancetype.RevisionName = "pinned-revision"
	f := newFixture(t, vm, nil)
	kube, _ := f.withInstancetypes()

	require.NoError(t, f.sync())
	ref := f.vm().Status.InstancetypeRef
	require.NotNil(t, ref)
	assert.Equal(t, "pinned-revision", ref.ControllerRevisionRef.Name)
	assert.Empty(t, kube.Actions(), "a named revision is used as it is")
}

func TestInstancetypeKeepsItsRevision(t *testing.T) {
	vm := withInstancetype(newVM(v1.RunStrategyHalted))
	vm.Status.InstancetypeRef = &v1.InstancetypeStatusRef{Kind: "VirtualMachineClusterInstancetype", Name: "u1.small",
		ControllerRevisionRef: &v1.ControllerRevisionRef{Name: "vm1-u1.small-it-uid-1"}}
	f := newFixture(t, vm, nil)
	kube, _ := f.withInstancetypes(u1small) // generation 3 now

	require.NoError(t, f.sync())
	assert.Equal(t, "vm1-u1.small-it-uid-1", f.vm().Status.InstancetypeRef.ControllerRevisionRef.Name,
		"an edited instance type does not change the VM")
	assert.Empty(t, kube.Actions())

	// Naming another instance type moves the VM to it.
	moved := f.vm()
	moved.Spec.Instancetype = &v1.InstancetypeMatcher{Name: "u1.small", Kind: "VirtualMachineInstancetype"}
	_, err := f.kv.KubevirtV1().VirtualMachines("ns").Update(context.Background(), moved, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh()
	err = f.sync()
	require.Error(t, err, "no namespaced u1.small")
	failure := vmCondition(f.vm(), v1.VirtualMachineFailure)
	require.NotNil(t, failure)
	assert.Equal(t, ReasonInstancetypeRevision, failure.Reason)
}

func vmCondition(vm *v1.VirtualMachine, t v1.VirtualMachineConditionType) *v1.VirtualMachineCondition {
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == t {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}
