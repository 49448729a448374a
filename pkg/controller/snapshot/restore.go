package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// RestoredClaimName is the name of the claim restored for one volume, unless the restore
// overrides it: KubeVirt's name for its RandomizeNames policy, from the restore's UID, so the
// same restore always makes the same claims.
func RestoredClaimName(r *snapshotv1beta1.VirtualMachineRestore, volume string) string {
	for _, o := range r.Spec.VolumeRestoreOverrides {
		if o.VolumeName == volume && o.RestoreName != "" {
			return o.RestoreName
		}
	}
	return fmt.Sprintf("restore-%s-%s", r.UID, volume)
}

// PopulatedForAnnotation on a claim names the DataVolume it is already the filled claim of:
// CDI then marks that DataVolume Succeeded without importing, as for KubeVirt's restores.
const PopulatedForAnnotation = "cdi.kubevirt.io/storage.populatedFor"

// templatedVolumes are the names of spec's volumes whose DataVolume comes from one of its
// templates.
func templatedVolumes(spec *v1.VirtualMachineSpec) sets.Set[string] {
	volumes := sets.New[string]()
	if spec.Template == nil {
		return volumes
	}
	for _, v := range spec.Template.Spec.Volumes {
		if v.DataVolume != nil && templateIndex(spec, v.DataVolume.Name) >= 0 {
			volumes.Insert(v.Name)
		}
	}
	return volumes
}

func templateIndex(spec *v1.VirtualMachineSpec, dataVolume string) int {
	for i, t := range spec.DataVolumeTemplates {
		if t.Name == dataVolume {
			return i
		}
	}
	return -1
}

// restoredSpec is the snapshotted spec with each restored volume on its restored claim, as
// KubeVirt restores: a claim volume names the claim; a DataVolume volume from a template
// names a copy of the template renamed to the claim (which CDI adopts, PopulatedForAnnotation);
// any other DataVolume volume becomes a claim volume, for its DataVolume is not the VM's to
// make again.
func restoredSpec(snapshotted *v1.VirtualMachineSpec, restores []snapshotv1beta1.VolumeRestore) *v1.VirtualMachineSpec {
	spec := snapshotted.DeepCopy()
	if spec.Template == nil {
		return spec
	}
	for i := range spec.Template.Spec.Volumes {
		v := &spec.Template.Spec.Volumes[i]
		for _, vr := range restores {
			if v.Name != vr.VolumeName {
				continue
			}
			switch {
			case v.PersistentVolumeClaim != nil:
				v.PersistentVolumeClaim.ClaimName = vr.PersistentVolumeClaimName
			case v.DataVolume != nil && vr.DataVolumeName != nil:
				if t := templateIndex(snapshotted, v.DataVolume.Name); t >= 0 {
					spec.DataVolumeTemplates[t].Name = *vr.DataVolumeName
				}
				v.DataVolume.Name = *vr.DataVolumeName
			case v.DataVolume != nil:
				v.VolumeSource = v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: vr.PersistentVolumeClaimName},
					Hotpluggable:                      v.DataVolume.Hotpluggable}}
			}
		}
	}
	return spec
}

// restoredFromLabel marks what Hangar made for a restore.
const restoredFromLabel = "restore.kubevirt.io/source-vm-name"

// LastRestoreAnnotation marks a VM created by a restore with RestoreMark, as KubeVirt marks
// restored VMs.
const LastRestoreAnnotation = "restore.kubevirt.io/lastRestoreUID"

// RestoreMark is the value of LastRestoreAnnotation for the restore r: its name and UID.
func RestoreMark(r *snapshotv1beta1.VirtualMachineRestore) string {
	return fmt.Sprintf("%s-%s", r.Name, r.UID)
}

// ownedByClone says whether a VirtualMachineClone made the restore.
func ownedByClone(r *snapshotv1beta1.VirtualMachineRestore) bool {
	ref := metav1.GetControllerOf(r)
	return ref != nil && ref.Kind == "VirtualMachineClone" && strings.HasPrefix(ref.APIVersion, "clone.kubevirt.io/")
}

// syncRestore moves one restore on: it waits for the snapshot and for the target VM to be
// stopped, creates a claim from each VolumeSnapshot, and writes (or creates) the VM with the
// snapshotted spec pointing at them. The VM's old claims are left alone.
func (c *Controller) syncRestore(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.restores.VirtualMachineRestores(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r := cached.DeepCopy()
	if r.DeletionTimestamp != nil || (r.Status != nil && ptr.Deref(r.Status.Complete, false)) {
		return c.unlockRestoredVM(ctx, ns, r.Spec.Target.Name, r.Name)
	}
	if r.Status == nil {
		r.Status = &snapshotv1beta1.VirtualMachineRestoreStatus{}
	}
	r.Status.Complete = ptr.To(false)

	s, err := c.snapshots.VirtualMachineSnapshots(ns).Get(r.Spec.VirtualMachineSnapshotName)
	if apierrors.IsNotFound(err) {
		return c.restoreWaits(ctx, cached, r, "SnapshotMissing", fmt.Sprintf("VirtualMachineSnapshot %s does not exist", r.Spec.VirtualMachineSnapshotName))
	}
	if err != nil {
		return err
	}
	if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) || s.Status.VirtualMachineSnapshotContentName == nil {
		return c.restoreWaits(ctx, cached, r, "SnapshotNotReady", fmt.Sprintf("VirtualMachineSnapshot %s is not ready to use", s.Name))
	}
	content, err := c.contents.VirtualMachineSnapshotContents(ns).Get(*s.Status.VirtualMachineSnapshotContentName)
	if err != nil {
		return c.restoreWaits(ctx, cached, r, "ContentMissing", fmt.Sprintf("VirtualMachineSnapshotContent %s: %v", *s.Status.VirtualMachineSnapshotContentName, err))
	}
	source := content.Spec.Source.VirtualMachine
	if source == nil {
		return c.restoreWaits(ctx, cached, r, "ContentInvalid", fmt.Sprintf("VirtualMachineSnapshotContent %s keeps no VirtualMachine", content.Name))
	}

	target, err := c.vms.VirtualMachines(ns).Get(r.Spec.Target.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	missing := err != nil
	// A VM this restore created already (its status not written yet) is not restored again.
	existing := !missing && target.Annotations[LastRestoreAnnotation] != RestoreMark(r)
	switch {
	case missing && r.Annotations[snapshotv1beta1.RestoreCreatesTargetAnnotation] == "false":
		// Deleted since the restore was created, whose user was checked for update only.
		return c.restoreWaits(ctx, cached, r, "TargetMissing",
			fmt.Sprintf("VirtualMachine %s was deleted after this restore, which may only rewrite it: create the restore again", r.Spec.Target.Name))
	case existing && ownedByClone(r):
		// A clone's restore makes a new VM: it never rewrites one that exists, which the
		// clone's user was not checked for.
		return c.restoreWaits(ctx, cached, r, "TargetExists",
			fmt.Sprintf("VirtualMachine %s already exists: the restore of a clone only creates a new VirtualMachine", target.Name))
	case existing && r.Annotations[snapshotv1beta1.RestoreCreatesTargetAnnotation] == "true":
		// Made since the restore was created, whose user was checked for create only.
		return c.restoreWaits(ctx, cached, r, "TargetExists",
			fmt.Sprintf("VirtualMachine %s was created after this restore, which may only create a new VirtualMachine: delete one of them", target.Name))
	}
	if existing {
		if other := target.Status.RestoreInProgress; other != nil && *other != r.Name {
			return c.restoreWaits(ctx, cached, r, "TargetLocked", fmt.Sprintf("VirtualMachine %s is being restored by %s", target.Name, *other))
		}
		if other := target.Status.SnapshotInProgress; other != nil {
			return c.restoreWaits(ctx, cached, r, "TargetLocked", fmt.Sprintf("VirtualMachine %s is being snapshotted by %s", target.Name, *other))
		}
		if why := c.notStopped(target); why != "" {
			return c.restoreWaits(ctx, cached, r, "TargetRunning",
				fmt.Sprintf("waiting for VirtualMachine %s to stop: %s; stop it (virtctl stop %s) and the restore goes on", target.Name, why, target.Name))
		}
		if err := c.lockRestoredVM(ctx, target, r.Name); err != nil {
			return err
		}
	}

	// The claims, one per volume backup, from its VolumeSnapshot.
	templated := templatedVolumes(&source.Spec)
	r.Status.Restores = nil
	for _, b := range content.Spec.VolumeBackups {
		claimName := RestoredClaimName(r, b.VolumeName)
		if err := c.restoreClaim(ctx, r, source, b, claimName, templated.Has(b.VolumeName)); err != nil {
			return err
		}
		vr := snapshotv1beta1.VolumeRestore{
			VolumeName: b.VolumeName, PersistentVolumeClaimName: claimName, VolumeSnapshotName: ptr.Deref(b.VolumeSnapshotName, ""),
		}
		if templated.Has(b.VolumeName) {
			vr.DataVolumeName = ptr.To(claimName)
		}
		r.Status.Restores = append(r.Status.Restores, vr)
	}

	// The VM: the snapshotted spec, its volumes pointing at the restored claims.
	spec := restoredSpec(&source.Spec, r.Status.Restores)
	if existing {
		restored := spec.DeepCopy()
		restored.RunStrategy, restored.Running = target.Spec.RunStrategy, target.Spec.Running
		if !apiequality.Semantic.DeepEqual(target.Spec, *restored) {
			updated := target.DeepCopy()
			// The VM stays as stopped as it was: the user starts it once the claims are bound.
			spec.RunStrategy, spec.Running = target.Spec.RunStrategy, target.Spec.Running
			updated.Spec = *spec
			if _, err := c.clients.KubeVirt.KubevirtV1().VirtualMachines(ns).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("restore VirtualMachine %s/%s: %w", ns, target.Name, err)
			}
			c.recorder.Eventf(r, corev1.EventTypeNormal, "VirtualMachineRestored", "Restored the spec of VirtualMachine %s from %s", target.Name, s.Name)
		}
	} else if target == nil || err != nil {
		vm, err := newTargetVM(r, source, spec)
		if err != nil {
			return c.restoreWaits(ctx, cached, r, "InvalidPatches", err.Error())
		}
		if _, err := c.clients.KubeVirt.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				return c.restoreWaits(ctx, cached, r, "TargetInvalid", fmt.Sprintf("create VirtualMachine %s: %v", vm.Name, err))
			}
			return fmt.Errorf("create VirtualMachine %s/%s: %w", ns, vm.Name, err)
		}
		c.recorder.Eventf(r, corev1.EventTypeNormal, "VirtualMachineCreated", "Created VirtualMachine %s from %s", vm.Name, s.Name)
	}

	now := c.now()
	r.Status.Complete = ptr.To(true)
	r.Status.RestoreTime = &now
	r.Status.Conditions = removeConditionIn(r.Status.Conditions, snapshotv1beta1.ConditionFailure)
	r.Status.Conditions = snapshotv1beta1.SetCondition(r.Status.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, "Operation complete", "The restore is complete", now)
	r.Status.Conditions = snapshotv1beta1.SetCondition(r.Status.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionTrue, "Operation complete", "The restore is complete", now)
	if err := c.writeRestoreStatus(ctx, cached, r); err != nil {
		return err
	}
	return c.unlockRestoredVM(ctx, ns, r.Spec.Target.Name, r.Name)
}

// notStopped says why a VM is not stopped, "" when it is: its run strategy must be Halted (or
// running false) and its instance gone.
func (c *Controller) notStopped(vm *v1.VirtualMachine) string {
	strategy := v1.RunStrategyHalted
	switch {
	case vm.Spec.RunStrategy != nil:
		strategy = *vm.Spec.RunStrategy
	case vm.Spec.Running != nil && *vm.Spec.Running:
		strategy = v1.RunStrategyAlways
	}
	if strategy != v1.RunStrategyHalted {
		return fmt.Sprintf("its runStrategy is %s", strategy)
	}
	if _, err := c.vmis.VirtualMachineInstances(vm.Namespace).Get(vm.Name); err == nil {
		return "its instance still exists"
	}
	return ""
}

// restoreClaim creates a claim like the snapshotted one, with the VolumeSnapshot as its data
// source.
func (c *Controller) restoreClaim(ctx context.Context, r *snapshotv1beta1.VirtualMachineRestore, source *snapshotv1beta1.VirtualMachine,
	b snapshotv1beta1.VolumeBackup, name string, forDataVolume bool) error {
	if _, err := c.claims.PersistentVolumeClaims(r.Namespace).Get(name); err == nil {
		return nil
	}
	old := b.PersistentVolumeClaim
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels:      map[string]string{restoredFromLabel: source.Name},
			Annotations: map[string]string{"restore.kubevirt.io/name": r.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      old.Spec.AccessModes,
			Resources:        corev1.VolumeResourceRequirements{Requests: old.Spec.Resources.Requests},
			StorageClassName: old.Spec.StorageClassName,
			VolumeMode:       old.Spec.VolumeMode,
			DataSource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"),
				Kind: "VolumeSnapshot", Name: ptr.Deref(b.VolumeSnapshotName, "")},
		},
	}
	if forDataVolume {
		// CDI takes the claim as the DataVolume's, already filled, and imports nothing.
		claim.Annotations[PopulatedForAnnotation] = name
	}
	for _, o := range r.Spec.VolumeRestoreOverrides {
		if o.VolumeName != b.VolumeName {
			continue
		}
		for k, v := range o.Labels {
			claim.Labels[k] = v
		}
		for k, v := range o.Annotations {
			claim.Annotations[k] = v
		}
	}
	_, err := c.clients.Kube.CoreV1().PersistentVolumeClaims(r.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s/%s from VolumeSnapshot %s: %w", r.Namespace, name, claim.Spec.DataSource.Name, err)
	}
	if err == nil {
		c.recorder.Eventf(r, corev1.EventTypeNormal, "ClaimRestored", "Created PersistentVolumeClaim %s from VolumeSnapshot %s", name, claim.Spec.DataSource.Name)
	}
	return nil
}

// newTargetVM is a new VM from the snapshotted one: the restore's target name, the kept
// labels and annotations, new MAC addresses (cleared, so new ones are made) and a new
// firmware UUID and serial when the snapshotted VM fixed them, as KubeVirt does for a new
// name; then the restore's patches.
func newTargetVM(r *snapshotv1beta1.VirtualMachineRestore, source *snapshotv1beta1.VirtualMachine, spec *v1.VirtualMachineSpec) (*v1.VirtualMachine, error) {
	vm := &v1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Spec.Target.Name, Namespace: r.Namespace,
			Labels: source.Labels, Annotations: keptVMAnnotations(source.Annotations)},
		Spec: *spec,
	}
	if vm.Annotations == nil {
		vm.Annotations = map[string]string{}
	}
	vm.Annotations[LastRestoreAnnotation] = RestoreMark(r)
	if t := vm.Spec.Template; t != nil {
		for i := range t.Spec.Domain.Devices.Interfaces {
			t.Spec.Domain.Devices.Interfaces[i].MacAddress = ""
		}
		if fw := t.Spec.Domain.Firmware; fw != nil {
			if fw.UUID != "" {
				fw.UUID = types.UID(uuid.NewUUID())
			}
			if fw.Serial != "" {
				fw.Serial = string(uuid.NewUUID())
			}
		}
	}
	if len(r.Spec.Patches) == 0 {
		return vm, nil
	}
	raw, err := json.Marshal(vm)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch([]byte("[" + strings.Join(r.Spec.Patches, ",") + "]"))
	if err != nil {
		return nil, fmt.Errorf("spec.patches: %w", err)
	}
	if raw, err = patch.Apply(raw); err != nil {
		return nil, fmt.Errorf("spec.patches: %w", err)
	}
	patched := &v1.VirtualMachine{}
	if err := json.Unmarshal(raw, patched); err != nil {
		return nil, fmt.Errorf("spec.patches: %w", err)
	}
	patched.Name, patched.Namespace = vm.Name, vm.Namespace
	// The mark stays whatever the patches did: it tells a retry the VM is this restore's.
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[LastRestoreAnnotation] = RestoreMark(r)
	return patched, nil
}

func keptVMAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// restoreWaits reports why the restore cannot go on yet; it is retried on every change of
// the VM, its instance or the snapshot.
func (c *Controller) restoreWaits(ctx context.Context, cached, r *snapshotv1beta1.VirtualMachineRestore, reason, message string) error {
	now := c.now()
	r.Status.Conditions = snapshotv1beta1.SetCondition(r.Status.Conditions, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, reason, message, now)
	r.Status.Conditions = snapshotv1beta1.SetCondition(r.Status.Conditions, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, reason, message, now)
	if !apiequality.Semantic.DeepEqual(cached.Status, r.Status) {
		c.recorder.Eventf(r, corev1.EventTypeNormal, reason, "%s", message)
	}
	return c.writeRestoreStatus(ctx, cached, r)
}

func (c *Controller) writeRestoreStatus(ctx context.Context, cached, r *snapshotv1beta1.VirtualMachineRestore) error {
	if apiequality.Semantic.DeepEqual(cached.Status, r.Status) {
		return nil
	}
	_, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineRestores(r.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of VirtualMachineRestore %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// lockRestoredVM records the restore in the VM's status.restoreInProgress.
func (c *Controller) lockRestoredVM(ctx context.Context, vm *v1.VirtualMachine, restore string) error {
	if ptr.Deref(vm.Status.RestoreInProgress, "") == restore {
		return nil
	}
	updated := vm.DeepCopy()
	updated.Status.RestoreInProgress = ptr.To(restore)
	if _, err := c.clients.KubeVirt.KubevirtV1().VirtualMachines(vm.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark VirtualMachine %s/%s as being restored: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// unlockRestoredVM clears the VM's status.restoreInProgress when it names the restore. It
// reads the VM from the API: the cache may not have the restored spec yet.
func (c *Controller) unlockRestoredVM(ctx context.Context, ns, name, restore string) error {
	vm, err := c.clients.KubeVirt.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ptr.Deref(vm.Status.RestoreInProgress, "") != restore {
		return nil
	}
	vm.Status.RestoreInProgress = nil
	if _, err := c.clients.KubeVirt.KubevirtV1().VirtualMachines(ns).UpdateStatus(ctx, vm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("clear restoreInProgress of VirtualMachine %s/%s: %w", ns, name, err)
	}
	return nil
}
