package vm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// persistentEFI makes the VM's guest keep its EFI variables.
func persistentEFI(vm *v1.VirtualMachine) *v1.VirtualMachine {
	vm.Spec.Template.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{Persistent: ptr.To(true)}}}
	return vm
}

// withStateClaims turns state claims on for the fixture's controller, with kube holding the
// given claims and class as the configured StorageClass.
func (f *fixture) withStateClaims(class string, claims ...*corev1.PersistentVolumeClaim) *kubefake.Clientset {
	var objs []runtime.Object
	factory := informers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0)
	pvcInformer := factory.Core().V1().PersistentVolumeClaims()
	for _, c := range claims {
		objs = append(objs, c)
		require.NoError(f.t, pvcInformer.Informer().GetIndexer().Add(c))
	}
	kube := kubefake.NewSimpleClientset(objs...)
	f.c.EnableStateClaims(kube, pvcInformer, func() string { return class })
	return kube
}

func TestStateClaim(t *testing.T) {
	userClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "persistent-state-for-vm1"}}
	tests := []struct {
		name      string
		vm        *v1.VirtualMachine
		class     string
		existing  []*corev1.PersistentVolumeClaim
		refuse    error // the API's answer to the claim's create
		wantClaim bool  // a claim is created
		wantVMI   bool
		wantEvent string
	}{
		{name: "persistent EFI: the claim, from the default class, then the instance", vm: persistentEFI(newVM(v1.RunStrategyAlways)),
			wantClaim: true, wantVMI: true, wantEvent: "Normal SuccessfulCreateStateClaim Created state claim persistent-state-for-vm1"},
		{name: "persistent TPM, configured class", class: "rwx", vm: func() *v1.VirtualMachine {
			vm := newVM(v1.RunStrategyAlways)
			vm.Spec.Template.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(true)}
			return vm
		}(), wantClaim: true, wantVMI: true, wantEvent: "Normal SuccessfulCreateStateClaim Created state claim persistent-state-for-vm1"},
		{name: "the user's own claim is used", vm: persistentEFI(newVM(v1.RunStrategyAlways)), existing: []*corev1.PersistentVolumeClaim{userClaim},
			wantVMI: true},
		{name: "nothing persistent, no claim", vm: newVM(v1.RunStrategyAlways), wantVMI: true},
		{name: "a halted VM gets no claim yet", vm: persistentEFI(newVM(v1.RunStrategyHalted))},
		{name: "quota refuses the claim: no instance, a warning", vm: persistentEFI(newVM(v1.RunStrategyAlways)),
			refuse:    apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "persistent-state-for-vm1", assert.AnError),
			wantEvent: "Warning FailedCreateStateClaim Error creating state claim persistent-state-for-vm1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.vm, nil)
			kube := f.withStateClaims(tt.class, tt.existing...)
			if tt.refuse != nil {
				kube.PrependReactor("create", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.refuse
				})
			}
			err := f.sync()
			if tt.refuse != nil {
				require.Error(t, err)
			}
			var created []*corev1.PersistentVolumeClaim
			for _, a := range kube.Actions() {
				if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "persistentvolumeclaims" && tt.refuse == nil {
					created = append(created, c.GetObject().(*corev1.PersistentVolumeClaim))
				}
			}
			if tt.wantClaim {
				require.Len(t, created, 1)
				claim := created[0]
				assert.Equal(t, "persistent-state-for-vm1", claim.Name)
				assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, claim.Spec.AccessModes)
				assert.Equal(t, ptr.To(corev1.PersistentVolumeFilesystem), claim.Spec.VolumeMode)
				assert.True(t, resource.MustParse("10Mi").Equal(claim.Spec.Resources.Requests[corev1.ResourceStorage]))
				if tt.class == "" {
					assert.Nil(t, claim.Spec.StorageClassName, "the cluster's default class")
				} else {
					assert.Equal(t, ptr.To(tt.class), claim.Spec.StorageClassName)
				}
				assert.Equal(t, []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "vm-uid",
					Controller: ptr.To(true)}}, claim.OwnerReferences)
			} else {
				assert.Empty(t, created)
			}
			assert.Equal(t, tt.wantVMI, f.vmi() != nil)
			events := f.events()
			if tt.wantEvent != "" {
				require.NotEmpty(t, events)
				assert.Contains(t, events[0], tt.wantEvent)
			}
		})
	}
}

// TestNoStateClaimsWhenNotEnabled: a controller without EnableStateClaims creates none.
func TestNoStateClaimsWhenNotEnabled(t *testing.T) {
	f := newFixture(t, persistentEFI(newVM(v1.RunStrategyAlways)), nil)
	require.NoError(t, f.sync())
	assert.NotNil(t, f.vmi(), "the instance waits for the user's claim")
}
