package virtualmachine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

func stateVM(efi, tpm bool) *kubevirt.VirtualMachine {
	vm := &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1"},
		Spec: kubevirt.VirtualMachineSpec{Template: &kubevirt.VirtualMachineInstanceTemplateSpec{}}}
	if efi {
		vm.Spec.Template.Spec.Domain.Firmware = &kubevirt.Firmware{Bootloader: &kubevirt.Bootloader{EFI: &kubevirt.EFI{Persistent: ptr.To(true)}}}
	}
	if tpm {
		vm.Spec.Template.Spec.Domain.Devices.TPM = &kubevirt.TPMDevice{Persistent: ptr.To(true)}
	}
	return vm
}

func TestCheckStateClaim(t *testing.T) {
	claimsAllowed := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "alice" && a.GetVerb() == "create" && a.GetResource() == "persistentvolumeclaims" &&
			a.GetAPIGroup() == "" && a.GetNamespace() == "ns" && a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no binding", nil
	})
	tests := []struct {
		name     string
		user     string
		old, vm  *kubevirt.VirtualMachine
		wantPath string // "" allowed; else a 403 naming this field
	}{
		{name: "create, persistent EFI, may create claims", user: "alice", vm: stateVM(true, false)},
		{name: "create, persistent EFI, may not", user: "mallory", vm: stateVM(true, false),
			wantPath: "spec.template.spec.domain.firmware.bootloader.efi.persistent"},
		{name: "create, persistent TPM, may not", user: "mallory", vm: stateVM(false, true),
			wantPath: "spec.template.spec.domain.devices.tpm.persistent"},
		{name: "create, nothing persistent", user: "mallory", vm: stateVM(false, false)},
		{name: "update that adds persistence, may not", user: "mallory", old: stateVM(false, false), vm: stateVM(false, true),
			wantPath: "spec.template.spec.domain.devices.tpm.persistent"},
		{name: "update of a VM that needed the claim already", user: "mallory", old: stateVM(true, false), vm: stateVM(true, true)},
		{name: "a disabled TPM keeps nothing", user: "mallory", vm: func() *kubevirt.VirtualMachine {
			vm := stateVM(false, true)
			vm.Spec.Template.Spec.Domain.Devices.TPM.Enabled = ptr.To(false)
			return vm
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &REST{authorizer: claimsAllowed}
			ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), &user.DefaultInfo{Name: tt.user})
			err := r.checkStateClaim(ctx, tt.old, tt.vm)
			if tt.wantPath == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "got %v", err)
			assert.Contains(t, err.Error(), tt.wantPath)
			assert.Contains(t, err.Error(), `user "mallory" may not create persistentvolumeclaims in namespace "ns" (no binding)`)
		})
	}
}
