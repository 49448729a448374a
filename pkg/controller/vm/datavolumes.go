package vm

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/datavolume"
)

// DataVolumes are CDI's (cdi.kubevirt.io): CDI imports, clones or uploads into each
// DataVolume's claim, which has the DataVolume's name. The controller creates the DataVolumes
// of a VM's dataVolumeTemplates as soon as the VM exists, running or not, as KubeVirt does
// (an import takes long; it should not start only when the user starts the VM), owned by the
// VM so that they go with it, and starts the VM's instance only when every DataVolume its
// volumes name is ready for it. It may create them: virt-api stores a VM whose templates add
// DataVolumes only when its user may create DataVolumes in the namespace
// (pkg/registry/virtualmachine/datavolumes.go). It reads and writes them as unstructured
// objects through the dynamic client, with CDI's own Go types (CDI's API module) for their
// content, and watches them only where the cluster serves CDI.

// DataVolumesGVR is CDI's DataVolumes.
var DataVolumesGVR = schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datavolumes"}

// Event reasons of DataVolumes (KubeVirt's).
const (
	SuccessfulDataVolumeCreateReason = "SuccessfulDataVolumeCreate"
	FailedDataVolumeCreateReason     = "FailedDataVolumeCreate"
)

// dataVolumes is what the controller needs of CDI; nil where the cluster does not serve it.
type dataVolumes struct {
	client dynamic.Interface
	lister cache.GenericLister
	claims corelisters.PersistentVolumeClaimLister
}

// EnableDataVolumes makes the controller create, watch and wait for VMs' DataVolumes. Call it
// only where the cluster serves cdi.kubevirt.io/v1beta1 datavolumes.
func (c *Controller) EnableDataVolumes(client dynamic.Interface, dvInformer informers.GenericInformer, claims corelisters.PersistentVolumeClaimLister) error {
	c.dataVolumes = &dataVolumes{client: client, lister: dvInformer.Lister(), claims: claims}
	c.synced = append(c.synced, dvInformer.Informer().HasSynced)
	// A DataVolume brings back the VM that controls it.
	_, err := dvInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, cur any) { c.enqueueOwner(cur) },
		DeleteFunc: c.enqueueOwner,
	})
	return err
}

func (c *Controller) enqueueOwner(obj any) {
	if key, ok := vmKeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// dataVolumeState is how far a VM's DataVolumes are, for the instance and the printable
// status.
type dataVolumeState struct {
	// ready: every DataVolume a volume names is filled, or waits for its first consumer (the
	// launcher pod), so the instance may start.
	ready bool
	// printable is Provisioning, WaitingForVolumeBinding or DataVolumeError while not ready.
	printable v1.VirtualMachinePrintableStatus
}

// usesDataVolumes says whether the VM has templates or dataVolume volumes.
func usesDataVolumes(vm *v1.VirtualMachine) bool {
	return len(vm.Spec.DataVolumeTemplates) > 0 || len(dataVolumeNames(vm)) > 0
}

// dataVolumeNames are the DataVolumes the template's volumes name, each once.
func dataVolumeNames(vm *v1.VirtualMachine) []string {
	var names []string
	seen := map[string]bool{}
	if vm.Spec.Template == nil {
		return nil
	}
	for _, vol := range vm.Spec.Template.Spec.Volumes {
		if vol.DataVolume != nil && !seen[vol.DataVolume.Name] {
			seen[vol.DataVolume.Name] = true
			names = append(names, vol.DataVolume.Name)
		}
	}
	return names
}

// syncDataVolumes creates the VM's missing template DataVolumes and says how far the
// DataVolumes its volumes name are.
func (c *Controller) syncDataVolumes(ctx context.Context, vm *v1.VirtualMachine) (dataVolumeState, *syncError) {
	if !usesDataVolumes(vm) {
		return dataVolumeState{ready: true}, nil
	}
	if c.dataVolumes == nil {
		return dataVolumeState{printable: v1.VirtualMachineStatusDataVolumeError}, &syncError{reason: ReasonFailedCreate,
			err: fmt.Errorf("the VM uses DataVolumes, and the cluster does not serve CDI (cdi.kubevirt.io); virt-controller notices when it does")}
	}
	for i := range vm.Spec.DataVolumeTemplates {
		if err := c.ensureDataVolume(ctx, vm, &vm.Spec.DataVolumeTemplates[i]); err != nil {
			return dataVolumeState{printable: v1.VirtualMachineStatusDataVolumeError}, err
		}
	}
	state := dataVolumeState{ready: true}
	worse := func(s v1.VirtualMachinePrintableStatus) {
		state.ready = false
		rank := map[v1.VirtualMachinePrintableStatus]int{"": 0, v1.VirtualMachineStatusProvisioning: 1,
			v1.VirtualMachineStatusWaitingForVolumeBinding: 2, v1.VirtualMachineStatusDataVolumeError: 3}
		if rank[s] > rank[state.printable] {
			state.printable = s
		}
	}
	for _, name := range dataVolumeNames(vm) {
		dv, err := c.dataVolume(vm.Namespace, name)
		if err != nil {
			return dataVolumeState{printable: v1.VirtualMachineStatusDataVolumeError}, &syncError{reason: ReasonFailedCreate, err: err}
		}
		switch {
		case dv == nil:
			worse(v1.VirtualMachineStatusProvisioning) // just created, or not made yet by its owner
		case datavolume.Usable(dv):
			// Filled, or waiting for a pod to consume it: the launcher pod is that pod.
		case dv.Status.Phase == cdi.Failed || runningFailed(dv):
			worse(v1.VirtualMachineStatusDataVolumeError)
		case c.claimPending(vm.Namespace, name):
			worse(v1.VirtualMachineStatusWaitingForVolumeBinding)
		default:
			worse(v1.VirtualMachineStatusProvisioning)
		}
	}
	return state, nil
}

// runningFailed: CDI's worker failed (its Running condition false with reason Error), which it
// retries, but the user should see.
func runningFailed(dv *cdi.DataVolume) bool {
	for _, cond := range dv.Status.Conditions {
		if cond.Type == cdi.DataVolumeRunning && cond.Status == corev1.ConditionFalse && cond.Reason == "Error" {
			return true
		}
	}
	return false
}

// claimPending: the DataVolume's claim exists and is not bound yet.
func (c *Controller) claimPending(namespace, name string) bool {
	if c.dataVolumes.claims == nil {
		return false
	}
	claim, err := c.dataVolumes.claims.PersistentVolumeClaims(namespace).Get(name)
	return err == nil && claim.Status.Phase == corev1.ClaimPending
}

// dataVolume reads a DataVolume from the cache, nil when there is none.
func (c *Controller) dataVolume(namespace, name string) (*cdi.DataVolume, error) {
	return datavolume.Get(c.dataVolumes.lister, namespace, name)
}

// ensureDataVolume creates the template's DataVolume when there is none of its name. One that
// exists, whoever made it, is used as it is.
func (c *Controller) ensureDataVolume(ctx context.Context, vm *v1.VirtualMachine, tmpl *v1.DataVolumeTemplateSpec) *syncError {
	if _, err := c.dataVolumes.lister.ByNamespace(vm.Namespace).Get(tmpl.Name); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("read DataVolume %s/%s: %w", vm.Namespace, tmpl.Name, err)}
	}
	obj, err := newDataVolume(vm, tmpl)
	if err != nil {
		return &syncError{reason: ReasonFailedCreate, err: err}
	}
	_, err = c.dataVolumes.client.Resource(DataVolumesGVR).Namespace(vm.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache is behind
	case err != nil:
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedDataVolumeCreateReason, "Error creating DataVolume %s: %v", tmpl.Name, err)
		return &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("create DataVolume %s/%s: %w", vm.Namespace, tmpl.Name, err)}
	}
	c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulDataVolumeCreateReason, "Created DataVolume %s", tmpl.Name)
	return nil
}

// newDataVolume is the DataVolume of a template: its name, labels and annotations, CDI's spec,
// KubeVirt's created-by label with the VM's UID, and the VM as its controller.
func newDataVolume(vm *v1.VirtualMachine, tmpl *v1.DataVolumeTemplateSpec) (*unstructured.Unstructured, error) {
	spec, err := toCDISpec(&tmpl.Spec)
	if err != nil {
		return nil, fmt.Errorf("DataVolume template %s: %w", tmpl.Name, err)
	}
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels[v1.CreatedByLabel] = string(vm.UID)
	owner := metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine"))
	// Not blocking the VM's deletion, as for state claims: that needs the right to update the
	// VM's finalizers where kube-apiserver enforces owner references, and nothing waits for it.
	owner.BlockOwnerDeletion = nil
	dv := &cdi.DataVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: DataVolumesGVR.GroupVersion().String(), Kind: "DataVolume"},
		ObjectMeta: metav1.ObjectMeta{
			Name: tmpl.Name, Namespace: vm.Namespace, Labels: labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: *spec,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dv)
	if err != nil {
		return nil, fmt.Errorf("DataVolume %s: %w", tmpl.Name, err)
	}
	// A new object has no status to send.
	delete(u, "status")
	return &unstructured.Unstructured{Object: u}, nil
}

// toCDISpec is Hangar's copy of the spec as CDI's own type: the same JSON.
func toCDISpec(spec *cdiv1beta1.DataVolumeSpec) (*cdi.DataVolumeSpec, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var out cdi.DataVolumeSpec
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
