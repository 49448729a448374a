package snapshot

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	vsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
)

var everything = labels.Everything()

// defaultClassAnnotation marks the default VolumeSnapshotClass of a driver.
const defaultClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

// ContentName is the name of a snapshot's content: KubeVirt's, from the snapshot's UID.
func ContentName(s *snapshotv1beta1.VirtualMachineSnapshot) string {
	return "vmsnapshot-content-" + string(s.UID)
}

// VolumeSnapshotName is the name of the VolumeSnapshot of one volume: KubeVirt's.
func VolumeSnapshotName(s *snapshotv1beta1.VirtualMachineSnapshot, volume string) string {
	return fmt.Sprintf("vmsnapshot-%s-volume-%s", s.UID, volume)
}

func snapshotDone(s *snapshotv1beta1.VirtualMachineSnapshot) bool {
	return s.Status != nil && (s.Status.Phase == snapshotv1beta1.Succeeded || s.Status.Phase == snapshotv1beta1.Failed)
}

// claimVolume is a volume of the VM backed by a claim.
type claimVolume struct {
	volume, claim string
}

// volumesOf splits the VM's volumes into those backed by a claim and the others. A
// DataVolume's claim has the DataVolume's name.
func volumesOf(vm *v1.VirtualMachine) (claims []claimVolume, excluded []string) {
	if vm.Spec.Template == nil {
		return nil, nil
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			claims = append(claims, claimVolume{volume: v.Name, claim: v.PersistentVolumeClaim.ClaimName})
		case v.DataVolume != nil:
			claims = append(claims, claimVolume{volume: v.Name, claim: v.DataVolume.Name})
		default:
			excluded = append(excluded, v.Name)
		}
	}
	return claims, excluded
}

// syncSnapshot moves one snapshot on: it locks the VM, finds a VolumeSnapshotClass for each
// claim, writes the content and the VolumeSnapshots, and reports when they are ready.
func (c *Controller) syncSnapshot(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.snapshots.VirtualMachineSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.releaseVanished(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	s := cached.DeepCopy()
	if s.DeletionTimestamp != nil || snapshotDone(s) {
		return c.release(ctx, s)
	}
	if s.Status == nil {
		s.Status = &snapshotv1beta1.VirtualMachineSnapshotStatus{}
	}
	st := s.Status
	if st.Phase == snapshotv1beta1.PhaseUnset {
		st.Phase = snapshotv1beta1.InProgress
	}

	// Once the content exists, the snapshot no longer needs the VM: a VM deleted meanwhile
	// loses nothing the snapshot took.
	if content, err := c.contents.VirtualMachineSnapshotContents(ns).Get(ContentName(s)); err == nil {
		return c.progress(ctx, cached, s, content)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	vm, err := c.vms.VirtualMachines(ns).Get(s.Spec.Source.Name)
	if apierrors.IsNotFound(err) {
		return c.waitOrFail(ctx, cached, s, "SourceMissing", fmt.Sprintf("VirtualMachine %s does not exist", s.Spec.Source.Name))
	}
	if err != nil {
		return err
	}
	if vm.DeletionTimestamp != nil {
		return c.waitOrFail(ctx, cached, s, "SourceMissing", fmt.Sprintf("VirtualMachine %s is being deleted", vm.Name))
	}

	// Before the content exists: the VM is locked for this snapshot, its claims checked.
	if other := vm.Status.SnapshotInProgress; other != nil && *other != s.Name {
		return c.waitOrFail(ctx, cached, s, "SourceLocked", fmt.Sprintf("VirtualMachine %s is being snapshotted by %s", vm.Name, *other))
	}
	if r := vm.Status.RestoreInProgress; r != nil {
		return c.waitOrFail(ctx, cached, s, "SourceLocked", fmt.Sprintf("VirtualMachine %s is being restored by %s", vm.Name, *r))
	}
	volumes, excluded := volumesOf(vm)
	backups := make([]snapshotv1beta1.VolumeBackup, 0, len(volumes))
	classes := map[string]string{}
	for _, v := range volumes {
		claim, err := c.claims.PersistentVolumeClaims(ns).Get(v.claim)
		if apierrors.IsNotFound(err) {
			return c.waitOrFail(ctx, cached, s, "ClaimMissing", fmt.Sprintf("volume %s: PersistentVolumeClaim %s does not exist", v.volume, v.claim))
		}
		if err != nil {
			return err
		}
		class, why := c.volumeSnapshotClass(claim)
		if class == "" {
			return c.waitOrFail(ctx, cached, s, "NoVolumeSnapshotClass", fmt.Sprintf("volume %s: %s", v.volume, why))
		}
		classes[v.volume] = class
		backups = append(backups, snapshotv1beta1.VolumeBackup{
			VolumeName: v.volume,
			PersistentVolumeClaim: snapshotv1beta1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace,
					Labels: claim.Labels, Annotations: keptClaimAnnotations(claim.Annotations)},
				Spec: *claim.Spec.DeepCopy(),
			},
			VolumeSnapshotName: ptr.To(VolumeSnapshotName(s, v.volume)),
		})
	}
	if err := c.lockVM(ctx, vm, s.Name); err != nil {
		return err
	}
	// A running guest is frozen just before its volumes are cut, and thawed once they are.
	st.Indications = c.quiesce(ctx, s, vm)
	if err := c.cut(ctx, s, vm, volumes, excluded, backups, classes); err != nil {
		c.thaw(ctx, s)
		return err
	}
	return c.writeStatus(ctx, cached, s)
}

// cut writes the snapshot's content (the VM's spec and its claims') and a VolumeSnapshot of
// each claim, and records them in the snapshot's status.
func (c *Controller) cut(ctx context.Context, s *snapshotv1beta1.VirtualMachineSnapshot, vm *v1.VirtualMachine,
	volumes []claimVolume, excluded []string, backups []snapshotv1beta1.VolumeBackup, classes map[string]string) error {
	ns, st := s.Namespace, s.Status

	content := &snapshotv1beta1.VirtualMachineSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: ContentName(s), Namespace: ns},
		Spec: snapshotv1beta1.VirtualMachineSnapshotContentSpec{
			VirtualMachineSnapshotName: ptr.To(s.Name),
			Source: snapshotv1beta1.SourceSpec{VirtualMachine: &snapshotv1beta1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, UID: vm.UID,
					Labels: vm.Labels, Annotations: vm.Annotations, Generation: vm.Generation},
				Spec: *vm.Spec.DeepCopy(),
			}},
			VolumeBackups: backups,
		},
	}
	// With the Delete policy, the content (and, through it, its VolumeSnapshots) is owned by
	// the snapshot, so garbage collection removes them with it; Retain leaves it unowned.
	if s.Spec.DeletionPolicy == nil || *s.Spec.DeletionPolicy == snapshotv1beta1.VirtualMachineSnapshotContentDelete {
		content.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s, snapshotv1beta1.SchemeGroupVersion.WithKind(snapshotv1beta1.KindSnapshot))}
	}
	created, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshotContents(ns).Create(ctx, content, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create VirtualMachineSnapshotContent %s/%s: %w", ns, content.Name, err)
	}
	if err == nil {
		c.recorder.Eventf(s, corev1.EventTypeNormal, "SnapshotContentCreated", "Created VirtualMachineSnapshotContent %s", created.Name)
		if err := c.createVolumeSnapshots(ctx, s, created, classes); err != nil {
			return err
		}
	}
	st.SourceUID = ptr.To(vm.UID)
	st.VirtualMachineSnapshotContentName = ptr.To(content.Name)
	st.SnapshotVolumes = &snapshotv1beta1.SnapshotVolumesLists{IncludedVolumes: volumeNames(volumes), ExcludedVolumes: excluded}
	return nil
}

// keptClaimAnnotations drops the annotations kube-controller-manager and provisioners put on
// a bound claim: a claim restored with them would look bound already.
func keptClaimAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, "pv.kubernetes.io/") || strings.HasPrefix(k, "volume.kubernetes.io/") ||
			strings.HasPrefix(k, "volume.beta.kubernetes.io/") || k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func volumeNames(vs []claimVolume) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.volume)
	}
	return out
}

// volumeSnapshotClass returns the VolumeSnapshotClass for a claim: one of its StorageClass'
// driver, the default one when the driver has several. "" and why when there is none.
func (c *Controller) volumeSnapshotClass(claim *corev1.PersistentVolumeClaim) (string, string) {
	scName := ptr.Deref(claim.Spec.StorageClassName, "")
	if scName == "" {
		return "", fmt.Sprintf("PersistentVolumeClaim %s has no StorageClass, so no VolumeSnapshotClass can be found for it", claim.Name)
	}
	sc, err := c.storageClasses.Get(scName)
	if err != nil {
		return "", fmt.Sprintf("PersistentVolumeClaim %s: StorageClass %s: %v", claim.Name, scName, err)
	}
	all, err := c.classes.List(everything)
	if err != nil {
		return "", err.Error()
	}
	var candidates []*vsv1.VolumeSnapshotClass
	for _, class := range all {
		if class.Driver == sc.Provisioner {
			candidates = append(candidates, class)
		}
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Name < candidates[j].Name })
	switch len(candidates) {
	case 0:
		return "", fmt.Sprintf("PersistentVolumeClaim %s of StorageClass %s (provisioner %s) cannot be snapshotted: no VolumeSnapshotClass has driver %s",
			claim.Name, sc.Name, sc.Provisioner, sc.Provisioner)
	case 1:
		return candidates[0].Name, ""
	}
	for _, class := range candidates {
		if class.Annotations[defaultClassAnnotation] == "true" {
			return class.Name, ""
		}
	}
	return "", fmt.Sprintf("PersistentVolumeClaim %s of StorageClass %s: several VolumeSnapshotClasses have driver %s and none is the default (annotation %s)",
		claim.Name, sc.Name, sc.Provisioner, defaultClassAnnotation)
}

// createVolumeSnapshots creates the VolumeSnapshot of each claim, owned by the content.
func (c *Controller) createVolumeSnapshots(ctx context.Context, s *snapshotv1beta1.VirtualMachineSnapshot,
	content *snapshotv1beta1.VirtualMachineSnapshotContent, classes map[string]string) error {
	owner := metav1.NewControllerRef(content, snapshotv1beta1.SchemeGroupVersion.WithKind(snapshotv1beta1.KindSnapshotContent))
	for _, b := range content.Spec.VolumeBackups {
		vs := &vsv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: *b.VolumeSnapshotName, Namespace: content.Namespace,
				OwnerReferences: []metav1.OwnerReference{*owner}},
			Spec: vsv1.VolumeSnapshotSpec{
				Source:                  vsv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(b.PersistentVolumeClaim.Name)},
				VolumeSnapshotClassName: ptr.To(classes[b.VolumeName]),
			},
		}
		_, err := c.clients.VolumeSnapshots.SnapshotV1().VolumeSnapshots(content.Namespace).Create(ctx, vs, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create VolumeSnapshot %s/%s: %w", content.Namespace, vs.Name, err)
		}
		if err == nil {
			c.recorder.Eventf(s, corev1.EventTypeNormal, "VolumeSnapshotCreated", "Created VolumeSnapshot %s of claim %s", vs.Name, b.PersistentVolumeClaim.Name)
		}
	}
	return nil
}

// progress reads the VolumeSnapshots of an existing content and reports them.
func (c *Controller) progress(ctx context.Context, cached, s *snapshotv1beta1.VirtualMachineSnapshot,
	content *snapshotv1beta1.VirtualMachineSnapshotContent) error {
	st := s.Status
	contentStatus := &snapshotv1beta1.VirtualMachineSnapshotContentStatus{}
	ready := true
	var latest *metav1.Time
	var failure string
	missing := false
	for _, b := range content.Spec.VolumeBackups {
		vs, err := c.volumeSnapshots.VolumeSnapshots(content.Namespace).Get(*b.VolumeSnapshotName)
		if apierrors.IsNotFound(err) {
			missing = true
			ready = false
			continue
		}
		if err != nil {
			return err
		}
		vss := snapshotv1beta1.VolumeSnapshotStatus{VolumeSnapshotName: vs.Name}
		if vs.Status != nil {
			vss.ReadyToUse = vs.Status.ReadyToUse
			vss.CreationTime = vs.Status.CreationTime
			if e := vs.Status.Error; e != nil && e.Message != nil {
				vss.Error = &snapshotv1beta1.Error{Time: e.Time, Message: e.Message}
				failure = fmt.Sprintf("VolumeSnapshot %s: %s", vs.Name, *e.Message)
			}
			if t := vs.Status.CreationTime; t != nil && (latest == nil || t.After(latest.Time)) {
				latest = t
			}
		}
		if !ptr.Deref(vss.ReadyToUse, false) {
			ready = false
		}
		contentStatus.VolumeSnapshotStatus = append(contentStatus.VolumeSnapshotStatus, vss)
	}
	if missing && content.DeletionTimestamp == nil {
		// Created after a failed attempt: make the missing ones.
		classes := map[string]string{}
		for _, b := range content.Spec.VolumeBackups {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: b.PersistentVolumeClaim.ObjectMeta, Spec: b.PersistentVolumeClaim.Spec}
			class, why := c.volumeSnapshotClass(claim)
			if class == "" {
				return c.waitOrFail(ctx, cached, s, "NoVolumeSnapshotClass", fmt.Sprintf("volume %s: %s", b.VolumeName, why))
			}
			classes[b.VolumeName] = class
		}
		if err := c.createVolumeSnapshots(ctx, s, content, classes); err != nil {
			return err
		}
	}
	if !missing && !ready && failure == "" && allCut(contentStatus.VolumeSnapshotStatus) {
		// Every volume is cut (the storage may take long to make the snapshots ready to
		// use): the guest need not stay frozen. The snapshot's end thaws it in any case.
		c.thaw(ctx, s)
	}
	contentStatus.ReadyToUse = ptr.To(ready)
	if ready {
		contentStatus.CreationTime = latest
		if contentStatus.CreationTime == nil {
			contentStatus.CreationTime = ptr.To(c.now())
		}
	}
	if failure != "" {
		contentStatus.Error = &snapshotv1beta1.Error{Time: ptr.To(c.now()), Message: ptr.To(failure)}
	}
	if content.Status == nil || !apiequality.Semantic.DeepEqual(*content.Status, *contentStatus) {
		updated := content.DeepCopy()
		updated.Status = contentStatus
		if _, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshotContents(content.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of VirtualMachineSnapshotContent %s/%s: %w", content.Namespace, content.Name, err)
		}
	}
	st.VirtualMachineSnapshotContentName = ptr.To(content.Name)
	if content.Spec.Source.VirtualMachine != nil {
		st.SourceUID = ptr.To(content.Spec.Source.VirtualMachine.UID)
	}
	if !ready {
		if failure != "" {
			return c.waitOrFail(ctx, cached, s, "VolumeSnapshotError", failure)
		}
		setCondition(st, snapshotv1beta1.ConditionProgressing, corev1.ConditionTrue, "InProgress", "Waiting for the VolumeSnapshots to be ready", c.now())
		setCondition(st, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, "NotReady", "Waiting for the VolumeSnapshots to be ready", c.now())
		removeCondition(st, snapshotv1beta1.ConditionFailure)
		st.Error = nil
		if err := c.writeStatus(ctx, cached, s); err != nil {
			return err
		}
		return c.requeueForDeadline(s)
	}
	st.Phase = snapshotv1beta1.Succeeded
	st.ReadyToUse = ptr.To(true)
	st.CreationTime = contentStatus.CreationTime
	st.Error = nil
	removeCondition(st, snapshotv1beta1.ConditionFailure)
	setCondition(st, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, "Operation complete", "The snapshot is complete", c.now())
	setCondition(st, snapshotv1beta1.ConditionReady, corev1.ConditionTrue, "Operation complete", "Every VolumeSnapshot is ready", c.now())
	if err := c.writeStatus(ctx, cached, s); err != nil {
		return err
	}
	c.recorder.Eventf(s, corev1.EventTypeNormal, "SnapshotReady", "Snapshot of VirtualMachine %s is ready", s.Spec.Source.Name)
	return c.release(ctx, s)
}

// failureDeadline is the snapshot's deadline; 0 means none.
func failureDeadline(s *snapshotv1beta1.VirtualMachineSnapshot) time.Duration {
	if s.Spec.FailureDeadline != nil {
		return s.Spec.FailureDeadline.Duration
	}
	return defaultFailureDeadline
}

// allCut says whether the storage has cut every volume: each VolumeSnapshot has its
// creationTime, the point in time it holds.
func allCut(statuses []snapshotv1beta1.VolumeSnapshotStatus) bool {
	for _, st := range statuses {
		if st.CreationTime == nil {
			return false
		}
	}
	return true
}

// defaultFailureDeadline is KubeVirt's.
const defaultFailureDeadline = 5 * time.Minute

// waitOrFail reports why the snapshot cannot go on: a Failure condition and error naming the
// cause, phase Failed once the failure deadline has passed (InProgress until then, as
// KubeVirt's).
func (c *Controller) waitOrFail(ctx context.Context, cached, s *snapshotv1beta1.VirtualMachineSnapshot, reason, message string) error {
	st := s.Status
	now := c.now()
	if st.Error == nil || ptr.Deref(st.Error.Message, "") != message {
		st.Error = &snapshotv1beta1.Error{Time: &now, Message: ptr.To(message)}
	}
	setCondition(st, snapshotv1beta1.ConditionFailure, corev1.ConditionTrue, reason, message, now)
	setCondition(st, snapshotv1beta1.ConditionReady, corev1.ConditionFalse, reason, message, now)
	st.ReadyToUse = ptr.To(false)
	deadline := failureDeadline(s)
	failed := deadline > 0 && now.Sub(s.CreationTimestamp.Time) >= deadline
	if failed {
		st.Phase = snapshotv1beta1.Failed
		setCondition(st, snapshotv1beta1.ConditionProgressing, corev1.ConditionFalse, "FailureDeadlineExceeded",
			fmt.Sprintf("failureDeadline %s passed: %s", deadline, message), now)
	} else {
		setCondition(st, snapshotv1beta1.ConditionProgressing, corev1.ConditionTrue, reason, message, now)
	}
	if err := c.writeStatus(ctx, cached, s); err != nil {
		return err
	}
	if failed {
		c.recorder.Eventf(s, corev1.EventTypeWarning, "SnapshotFailed", "%s", message)
		return c.release(ctx, s)
	}
	return c.requeueForDeadline(s)
}

// requeueForDeadline comes back when the failure deadline passes.
func (c *Controller) requeueForDeadline(s *snapshotv1beta1.VirtualMachineSnapshot) error {
	deadline := failureDeadline(s)
	if deadline == 0 {
		return nil
	}
	left := s.CreationTimestamp.Add(deadline).Sub(c.now().Time)
	if left < time.Second {
		left = time.Second
	}
	return controllerutil.RequeueAfter(left)
}

func (c *Controller) writeStatus(ctx context.Context, cached, s *snapshotv1beta1.VirtualMachineSnapshot) error {
	if apiequality.Semantic.DeepEqual(cached.Status, s.Status) {
		return nil
	}
	_, err := c.clients.Snapshots.SnapshotV1beta1().VirtualMachineSnapshots(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of VirtualMachineSnapshot %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// SourceFinalizer holds a VM while a snapshot of it is in progress, as KubeVirt's does: a
// delete of the VM (and of the claims it owns, its DataVolume templates') waits until the
// snapshot has its volumes. It is added after status.snapshotInProgress and removed before it,
// so a VM never keeps it without naming the snapshot that holds it.
const SourceFinalizer = "snapshot.kubevirt.io/snapshot-source-protection"

// lockVM marks the VM as being snapshotted: status.snapshotInProgress, then SourceFinalizer.
func (c *Controller) lockVM(ctx context.Context, vm *v1.VirtualMachine, snapshot string) error {
	vms := c.clients.KubeVirt.KubevirtV1().VirtualMachines(vm.Namespace)
	if ptr.Deref(vm.Status.SnapshotInProgress, "") != snapshot {
		updated := vm.DeepCopy()
		updated.Status.SnapshotInProgress = ptr.To(snapshot)
		var err error
		if vm, err = vms.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("mark VirtualMachine %s/%s as being snapshotted: %w", updated.Namespace, updated.Name, err)
		}
	}
	if slices.Contains(vm.Finalizers, SourceFinalizer) {
		return nil
	}
	updated := vm.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, SourceFinalizer)
	if _, err := vms.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("add finalizer %s to VirtualMachine %s/%s: %w", SourceFinalizer, vm.Namespace, vm.Name, err)
	}
	return nil
}

// unlockVM undoes lockVM: SourceFinalizer first, then snapshotInProgress.
func (c *Controller) unlockVM(ctx context.Context, vm *v1.VirtualMachine) error {
	vms := c.clients.KubeVirt.KubevirtV1().VirtualMachines(vm.Namespace)
	if slices.Contains(vm.Finalizers, SourceFinalizer) {
		updated := vm.DeepCopy()
		updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == SourceFinalizer })
		var err error
		if vm, err = vms.Update(ctx, updated, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			return nil // a VM being deleted goes with its last finalizer
		} else if err != nil {
			return fmt.Errorf("remove finalizer %s of VirtualMachine %s/%s: %w", SourceFinalizer, updated.Namespace, updated.Name, err)
		}
	}
	updated := vm.DeepCopy()
	updated.Status.SnapshotInProgress = nil
	if _, err := vms.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clear snapshotInProgress of VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// release ends the snapshot's hold on its VM: the guest thawed if the snapshot froze it, and
// the VM unlocked when it names the snapshot.
func (c *Controller) release(ctx context.Context, s *snapshotv1beta1.VirtualMachineSnapshot) error {
	vm, err := c.vms.VirtualMachines(s.Namespace).Get(s.Spec.Source.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ptr.Deref(vm.Status.SnapshotInProgress, "") != s.Name {
		return nil
	}
	c.thaw(ctx, s)
	return c.unlockVM(ctx, vm)
}

// releaseVanished unlocks the VMs a deleted snapshot still holds (it was deleted while in
// progress, or while virt-controller was down), thawing a guest whose status says it is frozen.
func (c *Controller) releaseVanished(ctx context.Context, ns, snapshot string) error {
	vms, err := c.vms.VirtualMachines(ns).List(everything)
	if err != nil {
		return err
	}
	for _, vm := range vms {
		if ptr.Deref(vm.Status.SnapshotInProgress, "") != snapshot {
			continue
		}
		if vmi, err := c.vmis.VirtualMachineInstances(ns).Get(vm.Name); err == nil && vmi.Status.FSFreezeStatus == v1.FSFrozen && c.clients.Freezer != nil {
			if err := c.clients.Freezer.Unfreeze(ctx, ns, vm.Name); err != nil {
				return fmt.Errorf("thaw %s/%s, frozen for the deleted snapshot %s: %w", ns, vm.Name, snapshot, err)
			}
		}
		if err := c.unlockVM(ctx, vm); err != nil {
			return err
		}
	}
	return nil
}

func setCondition(st *snapshotv1beta1.VirtualMachineSnapshotStatus, t snapshotv1beta1.ConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	st.Conditions = snapshotv1beta1.SetCondition(st.Conditions, t, status, reason, message, now)
}

func removeCondition(st *snapshotv1beta1.VirtualMachineSnapshotStatus, t snapshotv1beta1.ConditionType) {
	st.Conditions = removeConditionIn(st.Conditions, t)
}

func removeConditionIn(conds []snapshotv1beta1.Condition, t snapshotv1beta1.ConditionType) []snapshotv1beta1.Condition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
