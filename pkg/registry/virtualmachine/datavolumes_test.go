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

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// fakeCDI is a cluster that serves CDI (or not) and holds the DataVolumes named.
type fakeCDI struct {
	served   bool
	existing map[string]bool
}

func (f fakeCDI) Served(context.Context) (bool, error) { return f.served, nil }
func (f fakeCDI) Exists(_ context.Context, ns, name string) (bool, error) {
	return f.existing[ns+"/"+name], nil
}

// dvVM has a DataVolume template for each of templates, and a dataVolume volume for each of
// volumes.
func dvVM(templates []string, volumes ...string) *kubevirt.VirtualMachine {
	vm := &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1"},
		Spec: kubevirt.VirtualMachineSpec{Template: &kubevirt.VirtualMachineInstanceTemplateSpec{}}}
	for _, n := range templates {
		vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, kubevirt.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	for _, n := range volumes {
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes,
			kubevirt.Volume{Name: "v-" + n, VolumeSource: kubevirt.VolumeSource{DataVolume: &kubevirt.DataVolumeSource{Name: n}}})
	}
	return vm
}

func TestCheckDataVolumes(t *testing.T) {
	dvsAllowed := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "alice" && a.GetVerb() == "create" && a.GetResource() == "datavolumes" &&
			a.GetAPIGroup() == "cdi.kubevirt.io" && a.GetNamespace() == "ns" && a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no binding", nil
	})
	served := fakeCDI{served: true, existing: map[string]bool{"ns/made": true}}
	tests := []struct {
		name    string
		user    string
		cdi     DataVolumeLookup // nil: standalone
		old, vm *kubevirt.VirtualMachine
		want    func(error) bool // nil: allowed
		message string
	}{
		{name: "template, may create", user: "alice", cdi: served, vm: dvVM([]string{"root"}, "root")},
		{name: "template, may not", user: "mallory", cdi: served, vm: dvVM([]string{"root"}, "root"), want: apierrors.IsForbidden,
			message: `spec.dataVolumeTemplates[0]: Forbidden: the DataVolume root is created for the VM by Hangar: user "mallory" may not create datavolumes.cdi.kubevirt.io in namespace "ns" (no binding)`},
		{name: "template whose DataVolume exists, may not create", user: "mallory", cdi: served, vm: dvVM([]string{"made"}, "made")},
		{name: "volume naming an existing DataVolume needs no right", user: "mallory", cdi: served, vm: dvVM(nil, "made")},
		{name: "volume naming a missing DataVolume", user: "alice", cdi: served, vm: dvVM(nil, "nope"), want: apierrors.IsInvalid,
			message: `spec.template.spec.volumes[0].dataVolume.name: Not found: "nope"`},
		{name: "CDI not served", user: "alice", cdi: fakeCDI{}, vm: dvVM([]string{"root"}, "root"), want: apierrors.IsInvalid,
			message: "DataVolumes need CDI (the Containerized Data Importer, cdi.kubevirt.io), which this cluster does not serve"},
		{name: "CDI not served, a volume only", user: "alice", cdi: fakeCDI{}, vm: dvVM(nil, "made"), want: apierrors.IsInvalid,
			message: "spec.template.spec.volumes[0].dataVolume.name: Invalid value: \"made\": DataVolumes need CDI"},
		{name: "standalone", user: "alice", vm: dvVM([]string{"root"}, "root"), want: apierrors.IsInvalid,
			message: "DataVolumes need CDI (cdi.kubevirt.io), and this virt-api runs without a cluster"},
		{name: "no DataVolumes, no CDI", user: "mallory", cdi: fakeCDI{}, vm: dvVM(nil)},
		{name: "update keeping the templates, CDI gone", user: "mallory", cdi: fakeCDI{},
			old: dvVM([]string{"root"}, "root"), vm: dvVM([]string{"root"}, "root")},
		{name: "update adding a template, may not", user: "mallory", cdi: served,
			old: dvVM([]string{"root"}, "root"), vm: dvVM([]string{"root", "data"}, "root", "data"), want: apierrors.IsForbidden,
			message: "spec.dataVolumeTemplates[1]: Forbidden: the DataVolume data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &REST{authorizer: dvsAllowed, dataVolumes: tt.cdi}
			ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), &user.DefaultInfo{Name: tt.user})
			err := r.checkDataVolumes(ctx, tt.old, tt.vm)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, tt.want(err), "got %v", err)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}
