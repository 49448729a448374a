package workloadupdate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// createdTTL is how long a creation counts without the cache showing it.
const createdTTL = 30 * time.Second

func (c *Controller) sync(ctx context.Context) error {
	cfg := c.config.Get()
	vmis, err := c.vmiLister.List(labels.Everything())
	if err != nil {
		return err
	}
	migrations, err := c.migrationLister.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	var outdated []*v1.VirtualMachineInstance
	for _, vmi := range vmis {
		if vmi.DeletionTimestamp != nil || vmi.Status.Phase != v1.Running {
			continue
		}
		image, ok := c.launcherImage(vmi)
		if !ok {
			continue // none, or two during a migration: look again once it is done
		}
		old := image != cfg.LauncherImage
		if err := c.label(ctx, vmi, old); err != nil {
			errs = append(errs, err)
		}
		if old {
			outdated = append(outdated, vmi)
		}
	}
	if !cfg.WorkloadUpdates.LiveMigrate {
		return errors.Join(errs...)
	}

	now := c.now()
	p := decide(outdated, migrations, cfg, c.pending(migrations), c.budget(now, cfg.WorkloadUpdates), now)
	for _, vmi := range p.cannot {
		c.tellOnce(vmi)
	}
	for _, vmi := range p.migrate {
		m := &v1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{GenerateName: GenerateName, Namespace: vmi.Namespace,
				Annotations: map[string]string{MigrationAnnotation: cfg.LauncherImage}},
			Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
		}
		created, err := c.kubevirt.KubevirtV1().VirtualMachineInstanceMigrations(vmi.Namespace).Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedCreateReason, "Error creating a workload update migration: %v", err)
			errs = append(errs, fmt.Errorf("create workload update migration of %s/%s: %w", vmi.Namespace, vmi.Name, err))
			continue
		}
		c.mu.Lock()
		c.created[vmi.Namespace+"/"+vmi.Name] = now
		c.batches = append(c.batches, now)
		c.mu.Unlock()
		c.recorder.Eventf(vmi, corev1.EventTypeNormal, MigrationCreatedReason,
			"Created migration %s to move to a launcher of the installed version", created.Name)
		klog.InfoS("Moving instance to a current launcher", "vmi", klog.KObj(vmi), "migration", klog.KObj(created))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.retryIn > 0 {
		return controllerutil.RequeueAfter(p.retryIn)
	}
	return nil
}

// launcherImage is the compute image of the instance's one active launcher pod.
func (c *Controller) launcherImage(vmi *v1.VirtualMachineInstance) (string, bool) {
	if len(vmi.Status.ActivePods) != 1 {
		return "", false
	}
	pods, err := c.podLister.Pods(vmi.Namespace).List(labels.SelectorFromSet(labels.Set{v1.CreatedByLabel: string(vmi.UID)}))
	if err != nil {
		return "", false
	}
	for _, pod := range pods {
		if _, active := vmi.Status.ActivePods[pod.UID]; !active || pod.DeletionTimestamp != nil {
			continue
		}
		for _, ctr := range pod.Spec.Containers {
			if ctr.Name == layout.ComputeContainer {
				return ctr.Image, true
			}
		}
	}
	return "", false
}

// label sets or removes the outdated label, when it is not as it should be.
func (c *Controller) label(ctx context.Context, vmi *v1.VirtualMachineInstance, outdated bool) error {
	if _, has := vmi.Labels[OutdatedLabel]; has == outdated {
		return nil
	}
	var value *string
	if outdated {
		value = ptr.To("")
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{OutdatedLabel: value}}})
	if err != nil {
		return err
	}
	_, err = c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Patch(ctx, vmi.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("label %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return nil
}

// tellOnce says, once per instance and launcher image, why an outdated instance stays.
func (c *Controller) tellOnce(vmi *v1.VirtualMachineInstance) {
	key := vmi.Namespace + "/" + vmi.Name
	c.mu.Lock()
	told := c.told[key] == string(vmi.UID)
	c.told[key] = string(vmi.UID)
	c.mu.Unlock()
	if told {
		return
	}
	why := "it is not live-migratable"
	if cond := vmi.Status.Condition(v1.VirtualMachineInstanceIsMigratable); cond != nil && cond.Message != "" {
		why = cond.Message
	}
	c.recorder.Eventf(vmi, corev1.EventTypeWarning, CannotMigrateReason,
		"Its launcher is of an older version and stays until the instance stops: %s", why)
}

// budget is how many migrations the current batch interval still allows.
func (c *Controller) budget(now time.Time, w clusterconfig.WorkloadUpdates) batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	recent := c.batches[:0]
	for _, t := range c.batches {
		if now.Sub(t) < w.BatchInterval {
			recent = append(recent, t)
		}
	}
	c.batches = recent
	b := batch{left: max(0, w.BatchSize-len(recent))}
	if len(recent) > 0 {
		b.nextAt = recent[0].Add(w.BatchInterval)
	}
	return b
}

// pending returns the instances migrated that the cache does not show yet.
func (c *Controller) pending(migrations []*v1.VirtualMachineInstanceMigration) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for key, at := range c.created {
		shown := false
		for _, m := range migrations {
			if m.Namespace+"/"+m.Spec.VMIName == key && !m.CreationTimestamp.Time.Before(at.Truncate(time.Second)) {
				shown = true
			}
		}
		if shown || c.now().Sub(at) > createdTTL {
			delete(c.created, key)
			continue
		}
		out[key] = true
	}
	return out
}

// batch is what the batch interval allows: left more migrations until nextAt.
type batch struct {
	left   int
	nextAt time.Time
}

// plan is what one sync decides.
type plan struct {
	migrate []*v1.VirtualMachineInstance
	// cannot are outdated instances that cannot live-migrate.
	cannot  []*v1.VirtualMachineInstance
	retryIn time.Duration
}

// decide picks the outdated instances to migrate now: migratable, not moving already, not
// backing off from a failed update, within the batch and the migration limits.
func decide(outdated []*v1.VirtualMachineInstance, migrations []*v1.VirtualMachineInstanceMigration, cfg *clusterconfig.ClusterConfig,
	pending map[string]bool, b batch, now time.Time) plan {
	var p plan
	node := map[string]string{}
	for _, vmi := range outdated {
		node[vmi.Namespace+"/"+vmi.Name] = vmi.Status.NodeName
	}
	inFlight := map[string]bool{}
	outbound := map[string]int{}
	active := 0
	failures := map[string][]time.Time{}
	for _, m := range migrations {
		key := m.Namespace + "/" + m.Spec.VMIName
		if m.Status.Phase == v1.MigrationFailed && m.Annotations[MigrationAnnotation] != "" {
			failures[key] = append(failures[key], controllerutil.MigrationFailedAt(m))
		}
		if m.IsFinal() {
			continue
		}
		inFlight[key] = true
		active++
		outbound[node[key]]++
	}
	for key := range pending {
		if !inFlight[key] {
			inFlight[key] = true
			active++
			outbound[node[key]]++
		}
	}
	retry := func(d time.Duration) {
		if d > 0 && (p.retryIn == 0 || d < p.retryIn) {
			p.retryIn = d
		}
	}
	sorted := append([]*v1.VirtualMachineInstance(nil), outdated...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Namespace != sorted[j].Namespace {
			return sorted[i].Namespace < sorted[j].Namespace
		}
		return sorted[i].Name < sorted[j].Name
	})
	clusterLimit := int(ptr.Deref(cfg.Migrations.ParallelMigrationsPerCluster, 5))
	nodeLimit := int(ptr.Deref(cfg.Migrations.ParallelOutboundMigrationsPerNode, 2))
	left := b.left
	for _, vmi := range sorted {
		key := vmi.Namespace + "/" + vmi.Name
		switch {
		case inFlight[key] || vmi.Status.EvacuationNodeName != "":
			continue
		case !vmi.IsMigratable():
			p.cannot = append(p.cannot, vmi)
			continue
		}
		if wait := controllerutil.MigrationBackoff(failures[key], now); wait > 0 {
			retry(wait)
			continue
		}
		if left == 0 {
			retry(b.nextAt.Sub(now))
			continue
		}
		if active >= clusterLimit || outbound[vmi.Status.NodeName] >= nodeLimit {
			continue // a migration ending frees a slot, and brings a sync
		}
		p.migrate = append(p.migrate, vmi)
		left--
		active++
		outbound[vmi.Status.NodeName]++
	}
	return p
}
