package clone

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/snapshot"
)

// The events a clone records, KubeVirt's names; TargetVMExists is Hangar's.
const (
	SnapshotCreated       = "SnapshotCreated"
	SnapshotReady         = "SnapshotReady"
	RestoreCreated        = "RestoreCreated"
	RestoreReady          = "RestoreReady"
	TargetVMCreated       = "TargetVMCreated"
	PVCBound              = "PVCBound"
	SnapshotDeleted       = "SnapshotDeleted"
	SourceDoesNotExist    = "SourceDoesNotExist"
	RestoreCreationFailed = "RestoreCreationFailed"
	TargetVMExists        = "TargetVMExists"
	SnapshotFailed        = "SnapshotFailed"
	RestoreFailed         = "RestoreFailed"
)

// The conditions' reasons, KubeVirt's.
const (
	reasonProcessing = "Still processing"
	reasonReady      = "Ready"
	reasonFailed     = "Failed"
	reasonPending    = "Pending"
)

func randomSuffix() string { return rand.String(5) }

// targetName is the target VM's name: the spec's (virt-api names it at creation when the
// user did not), else the one the controller picked.
func targetName(cl *clonev1beta1.VirtualMachineClone) string {
	if cl.Spec.Target != nil && cl.Spec.Target.Name != "" {
		return cl.Spec.Target.Name
	}
	return ptr.Deref(cl.Status.TargetName, "")
}

func fromVM(cl *clonev1beta1.VirtualMachineClone) bool {
	return cl.Spec.Source.Kind == "VirtualMachine"
}

// sync moves one clone on, one phase after the other: SnapshotInProgress (a VM source's
// snapshot taken), RestoreInProgress (the restore to the target made), CreatingTargetVM
// (the target seen), Succeeded; then, once the target's claims are bound, the temporary
// snapshot and restore are deleted.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.clones.VirtualMachineClones(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil || cached.Spec.Source == nil || cached.Status.Phase == clonev1beta1.Failed {
		return nil
	}
	cl := cached.DeepCopy()
	st := &cl.Status

	if st.Phase == clonev1beta1.Succeeded {
		// As KubeVirt: a clone whose target is gone goes too.
		if _, err := c.vms.VirtualMachines(ns).Get(targetName(cl)); apierrors.IsNotFound(err) {
			err := c.clients.Clones.CloneV1beta1().VirtualMachineClones(ns).Delete(ctx, cl.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cl.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete VirtualMachineClone %s/%s of the deleted VirtualMachine %s: %w", ns, cl.Name, targetName(cl), err)
			}
			return nil
		}
		return c.cleanUp(ctx, cached, cl)
	}
	if targetName(cl) == "" {
		// Only a clone stored before virt-api named targets has none.
		st.TargetName = ptr.To(fmt.Sprintf("clone-%s-%s", cl.Spec.Source.Name, c.suffix()))
	}

	// Before the restore exists, the target's name must be free: a clone makes a new VM.
	if st.RestoreName == nil {
		if vm, err := c.vms.VirtualMachines(ns).Get(targetName(cl)); err == nil && !c.madeByClone(vm.Annotations, cl) {
			return c.fail(ctx, cached, cl, TargetVMExists, fmt.Sprintf("VirtualMachine %s already exists: a clone makes a new VirtualMachine", targetName(cl)))
		}
	}

	switch st.Phase {
	case clonev1beta1.PhaseUnset, clonev1beta1.SnapshotInProgress:
		s, done, err := c.snapshotPhase(ctx, cached, cl)
		if done || err != nil {
			return err
		}
		c.recorder.Eventf(cl, corev1.EventTypeNormal, SnapshotReady, "snapshot %s for clone %s is ready to use", s.Name, cl.Name)
		st.Phase = clonev1beta1.RestoreInProgress
		fallthrough
	case clonev1beta1.RestoreInProgress:
		done, err := c.restorePhase(ctx, cached, cl)
		if done || err != nil {
			return err
		}
		st.Phase = clonev1beta1.CreatingTargetVM
		fallthrough
	case clonev1beta1.CreatingTargetVM:
		if _, err := c.vms.VirtualMachines(ns).Get(targetName(cl)); err != nil {
			// The target shows in the cache soon after the restore completes; its event
			// brings the clone back.
			return c.progressing(ctx, cached, cl)
		}
		c.recorder.Eventf(cl, corev1.EventTypeNormal, TargetVMCreated, "created target VM %s for clone %s", targetName(cl), cl.Name)
		now := c.now()
		st.Phase = clonev1beta1.Succeeded
		st.CreationTime = &now
		st.Conditions = setCondition(st.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, reasonReady, "", now)
		st.Conditions = setCondition(st.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionTrue, reasonReady, "", now)
		if err := c.writeStatus(ctx, cached, cl); err != nil {
			return err
		}
		return c.cleanUp(ctx, cl, cl.DeepCopy())
	}
	return nil
}

// snapshotPhase takes (for a VM source) or finds the snapshot to restore and reports whether
// it is ready; done says the sync ends here (status written).
func (c *Controller) snapshotPhase(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone) (*snapshotv1beta1.VirtualMachineSnapshot, bool, error) {
	ns, st := cl.Namespace, &cl.Status
	var name string
	if fromVM(cl) {
		if st.SnapshotName == nil {
			vm, err := c.vms.VirtualMachines(ns).Get(cl.Spec.Source.Name)
			if apierrors.IsNotFound(err) {
				return nil, true, c.pending(ctx, cached, cl, fmt.Sprintf("source doesn't exist: VirtualMachine %s/%s", ns, cl.Spec.Source.Name))
			}
			if err != nil {
				return nil, true, err
			}
			s, err := c.takeSnapshot(ctx, cl, vm.Name)
			if err != nil {
				return nil, true, err
			}
			st.SnapshotName = ptr.To(s)
			st.Phase = clonev1beta1.SnapshotInProgress
			return nil, true, c.progressing(ctx, cached, cl)
		}
		name = *st.SnapshotName
	} else {
		name = cl.Spec.Source.Name
	}
	s, err := c.snapshots.VirtualMachineSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if !fromVM(cl) {
			return nil, true, c.pending(ctx, cached, cl, fmt.Sprintf("source doesn't exist: VirtualMachineSnapshot %s/%s", ns, name))
		}
		// The cache may not have the snapshot just made; the API says whether it is gone.
		if _, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil, true, c.fail(ctx, cached, cl, SnapshotDeleted, fmt.Sprintf("snapshot %s does not exist anymore", name))
		}
		return nil, true, nil
	}
	if err != nil {
		return nil, true, err
	}
	st.Phase = clonev1beta1.SnapshotInProgress
	if s.Status != nil && s.Status.Phase == snapshotv1beta1.Failed {
		return nil, true, c.fail(ctx, cached, cl, SnapshotFailed, fmt.Sprintf("snapshot %s failed: %s", s.Name, snapshotError(s)))
	}
	if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) {
		// Why the snapshot waits (no VolumeSnapshotClass, ...) shows on the clone too.
		return nil, true, c.progressingWith(ctx, cached, cl, snapshotError(s))
	}
	return s, false, nil
}

func snapshotError(s *snapshotv1beta1.VirtualMachineSnapshot) string {
	if s.Status != nil && s.Status.Error != nil && s.Status.Error.Message != nil {
		return *s.Status.Error.Message
	}
	return ""
}

// takeSnapshot creates the clone's snapshot of the VM, owned by the clone, KubeVirt's name:
// clone-<clone>-snapshot-<vm>-<5 random characters>. One the clone owns already (its name not
// written in the status yet) is taken instead.
func (c *Controller) takeSnapshot(ctx context.Context, cl *clonev1beta1.VirtualMachineClone, vm string) (string, error) {
	if owned, err := c.snapshots.VirtualMachineSnapshots(cl.Namespace).List(everything); err == nil {
		for _, s := range owned {
			if metav1.IsControlledBy(s, cl) {
				return s.Name, nil
			}
		}
	}
	s := &snapshotv1beta1.VirtualMachineSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("clone-%s-snapshot-%s-%s", cl.Name, vm, c.suffix()), Namespace: cl.Namespace,
			OwnerReferences: []metav1.OwnerReference{ownerRef(cl)}},
		Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm}},
	}
	if _, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshots(cl.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create snapshot %s for clone %s/%s: %w", s.Name, cl.Namespace, cl.Name, err)
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, SnapshotCreated, "created snapshot %s for clone %s", s.Name, cl.Name)
	return s.Name, nil
}

// restorePhase creates the restore of the snapshot into the target and reports whether it
// is complete; done says the sync ends here.
func (c *Controller) restorePhase(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone) (bool, error) {
	ns, st := cl.Namespace, &cl.Status
	if st.RestoreName == nil {
		snapName := cl.Spec.Source.Name
		if fromVM(cl) {
			snapName = ptr.Deref(st.SnapshotName, "")
		}
		s, err := c.snapshots.VirtualMachineSnapshots(ns).Get(snapName)
		if apierrors.IsNotFound(err) {
			return true, c.fail(ctx, cached, cl, SnapshotDeleted, fmt.Sprintf("snapshot %s does not exist anymore", snapName))
		}
		if err != nil {
			return true, err
		}
		content, err := c.contents.VirtualMachineSnapshotContents(ns).Get(snapshot.ContentName(s))
		if s.Status != nil && s.Status.VirtualMachineSnapshotContentName != nil {
			content, err = c.contents.VirtualMachineSnapshotContents(ns).Get(*s.Status.VirtualMachineSnapshotContentName)
		}
		if err != nil || content.Spec.Source.VirtualMachine == nil {
			// The content shows in the cache soon after the snapshot is ready.
			return true, c.progressing(ctx, cached, cl)
		}
		vm := content.Spec.Source.VirtualMachine
		patches, err := targetPatches(vm, &cl.Spec)
		if err != nil {
			c.recorder.Eventf(cl, corev1.EventTypeWarning, RestoreCreationFailed, "patches of clone %s: %v", cl.Name, err)
			return true, c.fail(ctx, cached, cl, RestoreCreationFailed, err.Error())
		}
		name, err := c.createRestore(ctx, cl, vm.Name, s.Name, patches)
		if err != nil {
			c.recorder.Eventf(cl, corev1.EventTypeWarning, RestoreCreationFailed, "%v", err)
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return true, c.fail(ctx, cached, cl, RestoreCreationFailed, err.Error())
			}
			return true, err
		}
		st.RestoreName = ptr.To(name)
		return true, c.progressing(ctx, cached, cl)
	}
	r, err := c.restores.VirtualMachineRestores(ns).Get(*st.RestoreName)
	if apierrors.IsNotFound(err) {
		if _, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, *st.RestoreName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return true, c.fail(ctx, cached, cl, RestoreFailed, fmt.Sprintf("restore %s does not exist anymore", *st.RestoreName))
		}
		return true, nil
	}
	if err != nil {
		return true, err
	}
	if r.Status == nil || !ptr.Deref(r.Status.Complete, false) {
		for _, cond := range restoreConditions(r) {
			if cond.Type != snapshotv1beta1.ConditionProgressing || cond.Status != corev1.ConditionFalse {
				continue
			}
			switch cond.Reason {
			case "TargetExists":
				return true, c.fail(ctx, cached, cl, TargetVMExists, cond.Message)
			case "InvalidPatches", "TargetInvalid":
				return true, c.fail(ctx, cached, cl, RestoreFailed, fmt.Sprintf("restore %s: %s", r.Name, cond.Message))
			default:
				return true, c.progressingWith(ctx, cached, cl, cond.Message)
			}
		}
		return true, c.progressing(ctx, cached, cl)
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, RestoreReady, "restore %s for clone %s is ready to use", r.Name, cl.Name)
	st.TargetName = ptr.To(r.Spec.Target.Name)
	return false, nil
}

func restoreConditions(r *snapshotv1beta1.VirtualMachineRestore) []snapshotv1beta1.Condition {
	if r.Status == nil {
		return nil
	}
	return r.Status.Conditions
}

// createRestore creates the restore of the snapshot into the target, owned by the clone,
// KubeVirt's name: clone-<clone>-restore-<vm>-<5 random characters>. One the clone owns
// already is taken instead.
func (c *Controller) createRestore(ctx context.Context, cl *clonev1beta1.VirtualMachineClone, vm, snapshotName string, patches []string) (string, error) {
	if owned, err := c.restores.VirtualMachineRestores(cl.Namespace).List(everything); err == nil {
		for _, r := range owned {
			if metav1.IsControlledBy(r, cl) {
				return r.Name, nil
			}
		}
	}
	r := &snapshotv1beta1.VirtualMachineRestore{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("clone-%s-restore-%s-%s", cl.Name, vm, c.suffix()), Namespace: cl.Namespace,
			OwnerReferences: []metav1.OwnerReference{ownerRef(cl)}},
		Spec: snapshotv1beta1.VirtualMachineRestoreSpec{
			Target:                     corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: targetName(cl)},
			VirtualMachineSnapshotName: snapshotName,
			Patches:                    patches,
		},
	}
	if _, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineRestores(cl.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create restore %s for clone %s/%s: %w", r.Name, cl.Namespace, cl.Name, err)
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, RestoreCreated, "created restore %s for clone %s", r.Name, cl.Name)
	return r.Name, nil
}

// cleanUp deletes the restore and (for a VM source) the snapshot once the target's claims
// are bound, and forgets their names, as KubeVirt does.
func (c *Controller) cleanUp(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone) error {
	ns, st := cl.Namespace, &cl.Status
	if st.RestoreName == nil {
		return nil
	}
	r, err := c.restores.VirtualMachineRestores(ns).Get(*st.RestoreName)
	if err == nil && r.Status != nil {
		for _, vr := range r.Status.Restores {
			claim, err := c.claims.PersistentVolumeClaims(ns).Get(vr.PersistentVolumeClaimName)
			if err != nil || claim.Status.Phase != corev1.ClaimBound {
				return nil // the claim's binding brings the clone back
			}
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, PVCBound, "all PVC for clone %s are bound", cl.Name)
	if err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineRestores(ns).Delete(ctx, *st.RestoreName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clean up restore %s of clone %s/%s: %w", *st.RestoreName, ns, cl.Name, err)
	}
	if fromVM(cl) && st.SnapshotName != nil {
		if err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshots(ns).Delete(ctx, *st.SnapshotName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clean up snapshot %s of clone %s/%s: %w", *st.SnapshotName, ns, cl.Name, err)
		}
	}
	st.SnapshotName, st.RestoreName = nil, nil
	return c.writeStatus(ctx, cached, cl)
}

// madeByClone says whether the restore of a VM's annotations is one the clone owns: a
// target made before the clone could write the restore's name.
func (c *Controller) madeByClone(annotations map[string]string, cl *clonev1beta1.VirtualMachineClone) bool {
	mark, ok := annotations[snapshot.LastRestoreAnnotation]
	if !ok {
		return false
	}
	restores, err := c.restores.VirtualMachineRestores(cl.Namespace).List(everything)
	if err != nil {
		return false
	}
	for _, r := range restores {
		if metav1.IsControlledBy(r, cl) && snapshot.RestoreMark(r) == mark {
			return true
		}
	}
	return false
}

func ownerRef(cl *clonev1beta1.VirtualMachineClone) metav1.OwnerReference {
	return *metav1.NewControllerRef(cl, clonev1beta1.SchemeGroupVersion.WithKind(clonev1beta1.KindClone))
}

// progressing writes KubeVirt's conditions of a clone on its way.
func (c *Controller) progressing(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone) error {
	return c.progressingWith(ctx, cached, cl, "")
}

// progressingWith is progressing with a message: why the snapshot or restore waits.
func (c *Controller) progressingWith(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone, message string) error {
	now := c.now()
	if cl.Status.Phase == clonev1beta1.PhaseUnset {
		cl.Status.Phase = clonev1beta1.SnapshotInProgress
	}
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionTrue, reasonProcessing, message, now)
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, reasonProcessing, message, now)
	return c.writeStatus(ctx, cached, cl)
}

// pending says the clone waits for its source, which may yet be created (KubeVirt waits).
func (c *Controller) pending(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone, message string) error {
	now := c.now()
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, reasonPending, message, now)
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, message, message, now)
	if !apiequality.Semantic.DeepEqual(cached.Status, cl.Status) {
		c.recorder.Eventf(cl, corev1.EventTypeNormal, SourceDoesNotExist, "%s", message)
	}
	return c.writeStatus(ctx, cached, cl)
}

// fail ends the clone: phase Failed, the reason in its Ready condition, as KubeVirt's.
func (c *Controller) fail(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone, event, message string) error {
	now := c.now()
	cl.Status.Phase = clonev1beta1.Failed
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, reasonFailed, message, now)
	cl.Status.Conditions = setCondition(cl.Status.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, message, message, now)
	c.recorder.Eventf(cl, corev1.EventTypeWarning, event, "%s", message)
	return c.writeStatus(ctx, cached, cl)
}

func (c *Controller) writeStatus(ctx context.Context, cached, cl *clonev1beta1.VirtualMachineClone) error {
	if apiequality.Semantic.DeepEqual(cached.Status, cl.Status) {
		return nil
	}
	if _, err := c.clients.Clones.CloneV1beta1().VirtualMachineClones(cl.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of VirtualMachineClone %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return nil
}

// setCondition sets a condition, with KubeVirt's reasons trimmed.
func setCondition(conds []snapshotv1beta1.Condition, t snapshotv1beta1.ConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) []snapshotv1beta1.Condition {
	return snapshotv1beta1.SetCondition(conds, t, status, strings.TrimSpace(reason), message, now)
}
