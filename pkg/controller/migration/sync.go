package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// Event reasons (KubeVirt's where it has them).
const (
	ReasonCreated   = "SuccessfulCreate"
	ReasonHandedOff = "SuccessfulHandOver"
	ReasonMigrated  = "Migrated"
	ReasonFailed    = "MigrationFailed"
	ReasonAborted   = "MigrationAborted"
)

// step is what one sync decided: the migration's next status and instance status (nil:
// unchanged), and pods to delete.
type step struct {
	mig     v1.VirtualMachineInstanceMigrationStatus
	vmi     *v1.VirtualMachineInstanceStatus
	delete  []*corev1.Pod
	requeue time.Duration
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	mig, err := c.lister.VirtualMachineInstanceMigrations(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.migVersions.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	vmiKey, cachedVersion := ns+"/"+mig.Spec.VMIName, mig.ResourceVersion
	vmi, err := c.vmiLister.VirtualMachineInstances(ns).Get(mig.Spec.VMIName)
	if apierrors.IsNotFound(err) {
		vmi, err = nil, nil
	}
	if err != nil {
		return err
	}
	if c.migVersions.Stale(key, mig.ResourceVersion, c.now()) ||
		(vmi != nil && c.vmiVersions.Stale(vmiKey, vmi.ResourceVersion, c.now())) {
		return controllerutil.RequeueAfter(controllerutil.StaleVersionTTL) // our write's event brings us back
	}
	if vmi != nil && mig.Status.MigrationState != nil && vmi.UID != "" && isActive(mig.Status.Phase) &&
		(vmi.Status.MigrationState == nil || vmi.Status.MigrationState.MigrationUid != mig.UID) {
		vmi = nil // another instance of the same name: not ours
	}

	// The finalizer holds a deleted migration until it is over: a cancel is an abort the
	// source must carry out, and a target pod must not be left behind.
	if mig.DeletionTimestamp == nil && !isFinal(mig.Status.Phase) && !slices.Contains(mig.Finalizers, v1.VirtualMachineInstanceMigrationFinalizer) {
		mig = mig.DeepCopy()
		mig.Finalizers = append(mig.Finalizers, v1.VirtualMachineInstanceMigrationFinalizer)
		if _, err = c.kubevirt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Update(ctx, mig, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("add finalizer to %s: %w", key, err)
		}
		// One write of the migration per sync: after two, the cache could show the first,
		// which the record of stale versions (one per key) would not know for old.
		c.migVersions.Replaced(key, cachedVersion, c.now())
		return nil // the update's event brings us back
	}

	st, err := c.next(ctx, mig, vmi)
	if err != nil {
		return err
	}
	if st.vmi != nil && !equality.Semantic.DeepEqual(*st.vmi, vmi.Status) {
		update := vmi.DeepCopy()
		update.Status = *st.vmi
		if _, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of instance %s/%s: %w", ns, vmi.Name, err)
		}
		c.vmiVersions.Replaced(vmiKey, vmi.ResourceVersion, c.now())
	}
	var errs []error
	for _, p := range st.delete {
		if p.DeletionTimestamp != nil {
			continue
		}
		err := c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	if !equality.Semantic.DeepEqual(st.mig, mig.Status) {
		old := mig.Status.Phase
		update := mig.DeepCopy()
		update.Status = st.mig
		if mig, err = c.kubevirt.KubevirtV1().VirtualMachineInstanceMigrations(ns).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
			return errors.Join(append(errs, fmt.Errorf("update status of %s: %w", key, err))...)
		}
		c.migVersions.Replaced(key, cachedVersion, c.now())
		if old != st.mig.Phase {
			klog.InfoS("migration phase", "migration", key, "vmi", mig.Spec.VMIName, "from", old, "to", st.mig.Phase)
			c.recordPhase(mig, vmi)
		}
	}
	if isFinal(mig.Status.Phase) && len(errs) == 0 && slices.Contains(mig.Finalizers, v1.VirtualMachineInstanceMigrationFinalizer) &&
		(mig.Status.Phase == v1.MigrationSucceeded || len(c.targetPods(mig)) == 0 || mig.DeletionTimestamp != nil) {
		mig = mig.DeepCopy()
		mig.Finalizers = slices.DeleteFunc(mig.Finalizers, func(f string) bool { return f == v1.VirtualMachineInstanceMigrationFinalizer })
		if _, err := c.kubevirt.KubevirtV1().VirtualMachineInstanceMigrations(ns).Update(ctx, mig, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove finalizer of %s: %w", key, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if st.requeue > 0 {
		return controllerutil.RequeueAfter(st.requeue)
	}
	return nil
}

func (c *Controller) recordPhase(mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance) {
	switch mig.Status.Phase {
	case v1.MigrationSucceeded:
		if vmi != nil {
			c.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonMigrated, "The instance migrated to node %s", vmi.Status.MigrationState.TargetNode)
		}
		c.recorder.Event(mig, corev1.EventTypeNormal, ReasonMigrated, "The instance migrated")
	case v1.MigrationFailed:
		msg := "The migration failed"
		if ms := mig.Status.MigrationState; ms != nil && ms.FailureReason != "" {
			msg += ": " + ms.FailureReason
		}
		c.recorder.Event(mig, corev1.EventTypeWarning, ReasonFailed, msg)
		if vmi != nil {
			c.recorder.Event(vmi, corev1.EventTypeWarning, ReasonFailed, msg)
		}
	}
}

// next decides one step of the migration's life.
func (c *Controller) next(ctx context.Context, mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance) (step, error) {
	now := metav1.NewTime(c.now())
	s := step{mig: *mig.Status.DeepCopy()}
	setPhase := func(p v1.VirtualMachineInstanceMigrationPhase) {
		if s.mig.Phase == p {
			return
		}
		s.mig.Phase = p
		s.mig.PhaseTransitionTimestamps = append(s.mig.PhaseTransitionTimestamps,
			v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: now})
	}
	targets := c.targetPods(mig)
	var vs *v1.VirtualMachineInstanceStatus
	if vmi != nil {
		vs = vmi.Status.DeepCopy()
	}
	ours := vs != nil && vs.MigrationState != nil && vs.MigrationState.MigrationUid == mig.UID
	// fail ends the migration here: the target pods go, and the instance forgets them.
	fail := func(reason string) {
		if ours && !vs.MigrationState.Completed {
			ms := vs.MigrationState
			if !ms.Failed {
				ms.Failed, ms.EndTimestamp = true, &now
				if ms.FailureReason == "" {
					ms.FailureReason = reason
				}
			}
			for _, p := range targets {
				delete(vs.ActivePods, p.UID)
			}
			// The bound target, whether or not the cache still has it: every pod recorded
			// off the source node.
			for uid, node := range vs.ActivePods {
				if node != vs.NodeName {
					delete(vs.ActivePods, uid)
				}
			}
			s.vmi = vs
		}
		if ours {
			s.mig.MigrationState = vs.MigrationState.DeepCopy()
		} else if s.mig.MigrationState != nil {
			s.mig.MigrationState.Failed = true
			if s.mig.MigrationState.FailureReason == "" {
				s.mig.MigrationState.FailureReason = reason
			}
		}
		s.delete = targets
		setPhase(v1.MigrationFailed)
	}

	if isFinal(mig.Status.Phase) {
		if mig.Status.Phase == v1.MigrationFailed {
			s.delete = targets // a failed migration's pod never stays
			if ours && !vs.MigrationState.Completed && !vs.MigrationState.Failed {
				// Failed without the instance hearing of it (its status write was lost): the
				// instance's next migration would wait for this one for good.
				reason := "the migration failed"
				if ms := mig.Status.MigrationState; ms != nil && ms.FailureReason != "" {
					reason = ms.FailureReason
				}
				fail(reason)
			}
		}
		return s, nil
	}
	if mig.DeletionTimestamp != nil && !isActive(mig.Status.Phase) {
		fail("the migration was deleted before it started")
		return s, nil
	}

	switch mig.Status.Phase {
	case v1.MigrationPhaseUnset, v1.MigrationPending:
		setPhase(v1.MigrationPending)
		if vmi == nil || vmi.Status.Phase != v1.Running || vmi.DeletionTimestamp != nil {
			fail("the instance is not running")
			return s, nil
		}
		if ms := vmi.Status.MigrationState; ms != nil && ms.MigrationUid != mig.UID && !ms.Completed && !ms.Failed {
			s.requeue = 5 * time.Second // another migration of the instance is finishing
			return s, nil
		}
		if c.olderMigration(mig) {
			// Two creates raced past virt-api's check (two replicas): the oldest goes first,
			// the other fails as KubeVirt's would.
			fail("another migration of the instance is in flight")
			return s, nil
		}
		cluster, byNode := c.activeCounts()
		maxCluster, maxNode := c.limits()
		if cluster >= maxCluster || byNode[vmi.Status.NodeName] >= maxNode {
			s.requeue = 2 * time.Second
			return s, nil
		}
		if len(targets) > 0 {
			// Pods that carry this migration's label, yet none was recorded as its target:
			// ours from a sync whose status write failed, or a tenant's. None is adopted;
			// they go, and the target is made afresh once they are gone.
			s.delete, s.requeue = targets, 2*time.Second
			return s, nil
		}
		pod, err := c.createTarget(ctx, mig, vmi)
		if err != nil {
			return s, err
		}
		vs.MigrationState = &v1.VirtualMachineInstanceMigrationState{
			MigrationUid: mig.UID, SourceNode: vmi.Status.NodeName, SourcePod: c.sourcePodName(vmi),
			TargetPod: pod.Name, MigrationConfiguration: c.migrationConfiguration(),
		}
		// The target is bound by the UID of the pod created here, recorded in the instance's
		// status (which only the controllers write) before any node is known: every later
		// step, and the target node's handler, take that pod and no other.
		if vs.ActivePods == nil {
			vs.ActivePods = map[types.UID]string{}
		}
		vs.ActivePods[pod.UID] = pod.Spec.NodeName
		s.vmi = vs
		s.mig.MigrationState = vs.MigrationState.DeepCopy()
		setPhase(v1.MigrationScheduling)
		return s, nil
	}

	// Scheduling and on: the instance must still be this migration's.
	if !ours {
		fail("the instance is gone or no longer running this migration")
		return s, nil
	}
	ms := vs.MigrationState
	target := boundTarget(targets, vs)
	if target == nil && mig.Status.Phase == v1.MigrationScheduling && now.Sub(phaseTime(mig, v1.MigrationScheduling)) < podCacheGrace {
		// Created a moment ago: the pod informer may not have it yet.
		s.requeue = time.Second
		return s, nil
	}
	switch {
	case ms.Completed:
		c.handOff(&s, vmi, vs, target)
		setPhase(v1.MigrationSucceeded)
		return s, nil
	case ms.Failed:
		fail(ms.FailureReason)
		return s, nil
	case vmi.Status.Phase != v1.Running:
		fail("the instance stopped running")
		return s, nil
	}
	abort := func(why string) {
		if !ms.AbortRequested {
			ms.AbortRequested = true
			if ms.FailureReason == "" {
				ms.FailureReason = why
			}
			s.vmi = vs
		}
	}
	if mig.DeletionTimestamp != nil {
		abort("the migration was cancelled")
		setCondition(&s.mig, v1.MigrationAbortRequested, "the migration was deleted", now)
	}
	entered := phaseTime(mig, mig.Status.Phase)
	switch mig.Status.Phase {
	case v1.MigrationScheduling:
		switch {
		case target == nil:
			fail("the target pod is gone")
		case target.Spec.NodeName != "":
			addr := c.handlerAddress(target.Spec.NodeName)
			if addr == "" {
				s.requeue = time.Second // no running handler on the target node yet
				break
			}
			if vs.ActivePods == nil {
				vs.ActivePods = map[types.UID]string{}
			}
			vs.ActivePods[target.UID] = target.Spec.NodeName
			ms.TargetNode, ms.TargetNodeAddress = target.Spec.NodeName, addr
			s.vmi = vs
			setPhase(v1.MigrationScheduled)
		case unschedulable(target) && now.Sub(entered) > unschedulableTimeout:
			fail("the target pod could not be scheduled: " + podScheduledMessage(target))
		case now.Sub(entered) > pendingTimeout:
			fail("the target pod did not start in time")
		default:
			s.requeue = 10 * time.Second
		}
	case v1.MigrationScheduled, v1.MigrationPreparingTarget, v1.MigrationTargetReady, v1.MigrationRunning:
		if target == nil || target.DeletionTimestamp != nil || target.Status.Phase == corev1.PodFailed || target.Status.Phase == corev1.PodSucceeded {
			abort("the target pod ended")
			if ms.StartTimestamp == nil {
				fail("the target pod ended before the migration started")
			}
			break
		}
		if ms.StartTimestamp != nil {
			setPhase(v1.MigrationRunning)
			c.boundRunning(&s, vmi, abort, fail, now)
			break
		}
		if target.Status.Phase == corev1.PodRunning {
			setPhase(v1.MigrationPreparingTarget)
		}
		if started := phaseTime(mig, v1.MigrationScheduled); now.Sub(started) > startTimeout {
			abort("the target was not ready in time")
			fail("the target was not ready in time")
			break
		}
		s.requeue = 10 * time.Second
	}
	s.mig.MigrationState = ms.DeepCopy()
	return s, nil
}

// boundRunning ends a migration that runs longer than runningBound. The source's launcher
// applies the same limits, but only an honest one does, and a migration that never ends
// holds one of the cluster's parallel migrations and one of its source node's for good:
// drains and everyone else's migrations would wait behind it. So the controller asks the
// source to abort once the bound is past, and ends the migration itself (target pod deleted,
// the instance kept on its source) if the source has not within abortGrace. The time is the
// controller's own (when it saw the migration Running), never what the source reports.
func (c *Controller) boundRunning(s *step, vmi *v1.VirtualMachineInstance, abort, fail func(string), now metav1.Time) {
	bound := runningBound(vmi, c.config.Get().Migrations)
	running := now.Sub(phaseTimeIn(s.mig, v1.MigrationRunning, now.Time))
	switch {
	case running > bound+abortGrace:
		fail(fmt.Sprintf("the migration ran longer than %s and the source did not abort it", bound))
	case running > bound:
		abort(fmt.Sprintf("the migration ran longer than %s", bound))
		s.requeue = bound + abortGrace - running + time.Second
	default:
		s.requeue = bound - running + time.Second
	}
}

// runningBound is how long a started migration may run: KubeVirt's completionTimeoutPerGiB
// for every GiB begun of what is copied (the guest's memory, and with a block migration its
// node-local disks: emptyDisks at their capacity, images at imageDiskAllowance) plus its
// progressTimeout; twice the completion time when post-copy may follow it.
func runningBound(vmi *v1.VirtualMachineInstance, m v1.MigrationConfiguration) time.Duration {
	var bytes int64
	if q, ok := vmi.Spec.Domain.GuestMemory(); ok {
		bytes += q.Value()
	}
	for _, v := range vmi.Spec.Volumes {
		switch {
		case v.EmptyDisk != nil:
			bytes += v.EmptyDisk.Capacity.Value()
		case v.ContainerDisk != nil:
			bytes += imageDiskAllowance
		}
	}
	if f := vmi.Spec.Domain.Firmware; f != nil && f.KernelBoot != nil {
		bytes += imageDiskAllowance
	}
	gib := max((bytes+(1<<30)-1)>>30, 1)
	completion := time.Duration(ptr.Deref(m.CompletionTimeoutPerGiB, 150)*gib) * time.Second
	if ptr.Deref(m.AllowPostCopy, false) {
		completion *= 2
	}
	return completion + time.Duration(ptr.Deref(m.ProgressTimeout, 150))*time.Second
}

// handOff gives a completed migration's instance to its target node: status.nodeName and
// the active pods say the target's, and the source pod (its launcher done) goes.
func (c *Controller) handOff(s *step, vmi *v1.VirtualMachineInstance, vs *v1.VirtualMachineInstanceStatus, target *corev1.Pod) {
	ms := vs.MigrationState
	if vs.NodeName != ms.TargetNode {
		for uid, node := range vs.ActivePods {
			if node != ms.TargetNode {
				delete(vs.ActivePods, uid)
			}
		}
		vs.NodeName = ms.TargetNode
		vs.EvacuationNodeName = ""
		// The target pod's address: the masquerade guest keeps its inner address, its pod
		// has a new one; the target's handler refreshes the rest.
		if target != nil && target.Status.PodIP != "" {
			for i := range vs.Interfaces {
				if vs.Interfaces[i].IP != "" {
					vs.Interfaces[i].IP, vs.Interfaces[i].IPs = target.Status.PodIP, []string{target.Status.PodIP}
				}
			}
		}
		s.vmi = vs
		c.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonHandedOff, "The instance is handed over to node %s", ms.TargetNode)
	}
	own, _ := c.podIndexer.ByIndex(podsByVMIIndex, vmi.Namespace+"/"+vmi.Name)
	for _, o := range own {
		if p := o.(*corev1.Pod); p.Spec.NodeName == ms.SourceNode && metav1.IsControlledBy(p, vmi) {
			s.delete = append(s.delete, p)
		}
	}
	s.mig.MigrationState = ms.DeepCopy()
}

// olderMigration says whether another migration of mig's instance, not final, is older
// (creation time, then name).
func (c *Controller) olderMigration(mig *v1.VirtualMachineInstanceMigration) bool {
	objs, _ := c.migIndexer.ByIndex(vmisByName, mig.Namespace+"/"+mig.Spec.VMIName)
	for _, o := range objs {
		other := o.(*v1.VirtualMachineInstanceMigration)
		if other.UID == mig.UID || isFinal(other.Status.Phase) || other.DeletionTimestamp != nil {
			continue
		}
		if other.CreationTimestamp.Before(&mig.CreationTimestamp) ||
			other.CreationTimestamp.Equal(&mig.CreationTimestamp) && other.Name < mig.Name {
			return true
		}
	}
	return false
}

// createTarget makes the target launcher pod: the instance's pod, kept off the source node
// and on nodes that also match the migration's added node selector.
func (c *Controller) createTarget(ctx context.Context, mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance) (*corev1.Pod, error) {
	modes, missing, err := launcherpod.ClaimVolumeModes(c.claims, vmi)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return nil, fmt.Errorf("claim %s/%s of the instance does not exist", vmi.Namespace, missing)
	}
	pod, err := launcherpod.Build(vmi, modes, c.config.Get())
	if err != nil {
		return nil, err
	}
	pod.Labels[v1.MigrationJobLabel] = string(mig.UID)
	for k, v := range mig.Spec.AddedNodeSelector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	avoidNode(pod, vmi.Status.NodeName)
	created, err := c.kube.CoreV1().Pods(vmi.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.recorder.Eventf(mig, corev1.EventTypeWarning, "FailedCreate", "Error creating the target pod: %v", err)
		return nil, fmt.Errorf("create target pod for %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	c.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonCreated, "Created migration target pod %s", created.Name)
	return created, nil
}

// avoidNode adds "not on node" to every required node selector term (or makes one).
func avoidNode(pod *corev1.Pod, node string) {
	notSource := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	a := pod.Spec.Affinity
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{notSource}}},
		}
		return
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, notSource)
	}
}

// migrationConfiguration is what the handlers apply: the cluster configuration's
// migrations block (every field set) as it is when the migration starts.
func (c *Controller) migrationConfiguration() *v1.MigrationConfiguration {
	return c.config.Get().Migrations.DeepCopy()
}

// limits are the parallel migrations allowed in the cluster and out of one node.
func (c *Controller) limits() (cluster, perNode int) {
	m := c.config.Get().Migrations
	return int(ptr.Deref(m.ParallelMigrationsPerCluster, DefaultParallelMigrationsPerCluster)),
		int(ptr.Deref(m.ParallelOutboundMigrationsPerNode, DefaultParallelOutboundMigrationsPerNode))
}

func (c *Controller) sourcePodName(vmi *v1.VirtualMachineInstance) string {
	own, _ := c.podIndexer.ByIndex(podsByVMIIndex, vmi.Namespace+"/"+vmi.Name)
	for _, o := range own {
		if p := o.(*corev1.Pod); p.Spec.NodeName == vmi.Status.NodeName && metav1.IsControlledBy(p, vmi) && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	return ""
}

// boundTarget is the migration's target pod: of the pods labelled with the migration's UID,
// the one the controller created, whose UID it recorded in the instance's active pods and
// whose name in its migration state. Anyone who may create pods in the namespace can label
// one with the migration's UID (which they can read); a label alone binds nothing.
func boundTarget(labelled []*corev1.Pod, vs *v1.VirtualMachineInstanceStatus) *corev1.Pod {
	for _, p := range labelled {
		if _, recorded := vs.ActivePods[p.UID]; recorded && p.Name == vs.MigrationState.TargetPod {
			return p
		}
	}
	return nil
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func podScheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// phaseTimeIn is when status last entered phase, or now when it never did (it enters it in
// this sync).
func phaseTimeIn(status v1.VirtualMachineInstanceMigrationStatus, phase v1.VirtualMachineInstanceMigrationPhase, now time.Time) time.Time {
	for i := len(status.PhaseTransitionTimestamps) - 1; i >= 0; i-- {
		if t := status.PhaseTransitionTimestamps[i]; t.Phase == phase {
			return t.PhaseTransitionTimestamp.Time
		}
	}
	return now
}

// phaseTime is when mig entered phase (its creation when never recorded).
func phaseTime(mig *v1.VirtualMachineInstanceMigration, phase v1.VirtualMachineInstanceMigrationPhase) time.Time {
	for i := len(mig.Status.PhaseTransitionTimestamps) - 1; i >= 0; i-- {
		if t := mig.Status.PhaseTransitionTimestamps[i]; t.Phase == phase {
			return t.PhaseTransitionTimestamp.Time
		}
	}
	return mig.CreationTimestamp.Time
}

func setCondition(s *v1.VirtualMachineInstanceMigrationStatus, t v1.VirtualMachineInstanceMigrationConditionType, msg string, now metav1.Time) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return
		}
	}
	s.Conditions = append(s.Conditions, v1.VirtualMachineInstanceMigrationCondition{
		Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now, Message: msg,
	})
}
