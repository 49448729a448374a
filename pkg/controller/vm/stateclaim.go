package vm

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// A VM whose guest keeps EFI variables or TPM state needs its state claim before its instance
// can start (KubeVirt's backend storage). The controller creates it, as KubeVirt's does, from
// the configured vmStateStorageClass or the cluster's default class, owned by the VM so that
// it goes with it. It may: virt-api stores a VM that asks for persistent state only when the
// user who asked may create claims in the namespace (pkg/registry/virtualmachine), and the
// namespace's quota and LimitRanges apply to this create as to the user's own. A claim of
// that name that exists already, the user's own, is used as it is.

// stateClaimSize is what the claim asks for: KubeVirt's 10Mi; the variable store and the
// TPM's state are a few hundred KiB.
var stateClaimSize = resource.MustParse("10Mi")

// Event reasons of the state claim.
const (
	SuccessfulCreateStateClaimReason = "SuccessfulCreateStateClaim"
	FailedCreateStateClaimReason     = "FailedCreateStateClaim"
)

// stateClaims is what creating state claims takes; nil on a controller that makes none.
type stateClaims struct {
	kube   kubernetes.Interface
	lister corelisters.PersistentVolumeClaimLister
	// class is the StorageClass of new claims, "" for the cluster's default.
	class func() string
}

// EnableStateClaims makes the controller create the state claims of VMs that need one.
func (c *Controller) EnableStateClaims(kube kubernetes.Interface, claims coreinformers.PersistentVolumeClaimInformer, class func() string) {
	c.claims = &stateClaims{kube: kube, lister: claims.Lister(), class: class}
	c.synced = append(c.synced, claims.Informer().HasSynced)
}

// ensureStateClaim creates the VM's state claim when its guest needs one and it is missing.
func (c *Controller) ensureStateClaim(ctx context.Context, vm *v1.VirtualMachine) *syncError {
	if c.claims == nil || vm.Spec.Template == nil || !vm.Spec.Template.Spec.NeedsStateClaim() {
		return nil
	}
	name := layout.StateClaimPrefix + vm.Name
	if _, err := c.claims.lister.PersistentVolumeClaims(vm.Namespace).Get(name); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return &syncError{reason: ReasonFailedCreate, err: err}
	}
	owner := metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine"))
	// Not blocking the VM's deletion: that would need the right to update the VM's
	// finalizers where kube-apiserver enforces owner references, and nothing waits for it.
	owner.BlockOwnerDeletion = nil
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: stateClaimSize}},
		},
	}
	if class := c.claims.class(); class != "" {
		claim.Spec.StorageClassName = &class
	}
	_, err := c.claims.kube.CoreV1().PersistentVolumeClaims(vm.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // the cache is behind
	case err != nil:
		c.recorder.Eventf(vm, corev1.EventTypeWarning, FailedCreateStateClaimReason, "Error creating state claim %s: %v", name, err)
		return &syncError{reason: ReasonFailedCreate, err: fmt.Errorf("create state claim %s/%s: %w", vm.Namespace, name, err)}
	}
	c.recorder.Eventf(vm, corev1.EventTypeNormal, SuccessfulCreateStateClaimReason, "Created state claim %s", name)
	return nil
}
