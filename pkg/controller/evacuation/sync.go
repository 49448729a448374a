package evacuation

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
)

// plan is what one sync decides: the instances to migrate now, and when to look again for
// the ones waiting out a back-off.
type plan struct {
	migrate []*v1.VirtualMachineInstance
	retryIn time.Duration
}

func (c *Controller) sync(ctx context.Context) error {
	vmis, err := c.vmiLister.List(labels.Everything())
	if err != nil {
		return err
	}
	migrations, err := c.migrationLister.List(labels.Everything())
	if err != nil {
		return err
	}
	p := decide(vmis, migrations, c.config.Get(), c.pendingCreations(migrations), c.now())

	var errs []error
	for _, vmi := range p.migrate {
		m := newMigration(vmi)
		created, err := c.kubevirt.KubevirtV1().VirtualMachineInstanceMigrations(vmi.Namespace).Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedCreateReason, "Error creating a Migration: %v", err)
			errs = append(errs, fmt.Errorf("create evacuation migration of %s/%s: %w", vmi.Namespace, vmi.Name, err))
			continue
		}
		c.mu.Lock()
		c.created[vmi.Namespace+"/"+vmi.Name] = c.now()
		c.mu.Unlock()
		c.recorder.Eventf(vmi, corev1.EventTypeNormal, SuccessfulCreateReason, "Created Migration %s", created.Name)
		klog.InfoS("Evacuating instance", "vmi", klog.KObj(vmi), "node", vmi.Status.EvacuationNodeName, "migration", klog.KObj(created))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.retryIn > 0 {
		return controllerutil.RequeueAfter(p.retryIn)
	}
	return nil
}

// pendingCreations returns the instances with a creation the cache does not show yet,
// forgetting the ones it shows and the ones too old to wait for.
func (c *Controller) pendingCreations(migrations []*v1.VirtualMachineInstanceMigration) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for key, at := range c.created {
		if c.now().Sub(at) > createdTTL || createdAfter(migrations, key, at) {
			delete(c.created, key)
			continue
		}
		out[key] = true
	}
	return out
}

// createdAfter says whether the cache holds a migration of the instance created at or after t
// (creation times have one-second resolution).
func createdAfter(migrations []*v1.VirtualMachineInstanceMigration, key string, t time.Time) bool {
	for _, m := range migrations {
		if m.Namespace+"/"+m.Spec.VMIName == key && !m.CreationTimestamp.Time.Before(t.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

// decide picks the instances to migrate: marked to leave the node they are on, wanting to
// migrate on eviction, migratable, with no migration in flight and not backing off, oldest
// mark first, within the free slots of the cluster and of their node.
func decide(vmis []*v1.VirtualMachineInstance, migrations []*v1.VirtualMachineInstanceMigration, cfg *clusterconfig.ClusterConfig,
	pending map[string]bool, now time.Time) plan {
	byKey := map[string]*v1.VirtualMachineInstance{}
	for _, vmi := range vmis {
		byKey[vmi.Namespace+"/"+vmi.Name] = vmi
	}
	inFlight := map[string]bool{}
	outbound := map[string]int{} // migrations in flight by source node
	active := 0
	failures := map[string][]time.Time{}
	for _, m := range migrations {
		key := m.Namespace + "/" + m.Spec.VMIName
		if m.Status.Phase == v1.MigrationFailed {
			if m.Annotations[v1.EvacuationMigrationAnnotation] != "" {
				failures[key] = append(failures[key], controllerutil.MigrationFailedAt(m))
			}
			continue
		}
		if m.IsFinal() {
			continue
		}
		inFlight[key] = true
		active++
		if vmi := byKey[key]; vmi != nil {
			outbound[vmi.Status.NodeName]++
		}
	}
	for key := range pending {
		if !inFlight[key] {
			inFlight[key] = true
			active++
			if vmi := byKey[key]; vmi != nil {
				outbound[vmi.Status.NodeName]++
			}
		}
	}

	var candidates []*v1.VirtualMachineInstance
	var retryIn time.Duration
	for _, vmi := range vmis {
		key := vmi.Namespace + "/" + vmi.Name
		node := vmi.Status.EvacuationNodeName
		if node == "" || node != vmi.Status.NodeName || vmi.DeletionTimestamp != nil || vmi.Status.Phase != v1.Running || inFlight[key] {
			continue
		}
		if !migratesOnEviction(vmi, cfg) {
			continue
		}
		if wait := controllerutil.MigrationBackoff(failures[key], now); wait > 0 {
			if retryIn == 0 || wait < retryIn {
				retryIn = wait
			}
			continue
		}
		candidates = append(candidates, vmi)
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Status.NodeName != b.Status.NodeName {
			return a.Status.NodeName < b.Status.NodeName
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})

	clusterLimit := int(ptr.Deref(cfg.Migrations.ParallelMigrationsPerCluster, 5))
	nodeLimit := int(ptr.Deref(cfg.Migrations.ParallelOutboundMigrationsPerNode, 2))
	var out []*v1.VirtualMachineInstance
	for _, vmi := range candidates {
		if active >= clusterLimit {
			break
		}
		if outbound[vmi.Status.NodeName] >= nodeLimit {
			continue
		}
		out = append(out, vmi)
		active++
		outbound[vmi.Status.NodeName]++
	}
	return plan{migrate: out, retryIn: retryIn}
}

// migratesOnEviction is KubeVirt's test: the effective strategy is LiveMigrate, or
// LiveMigrateIfPossible and the instance is migratable. External leaves the instance to
// whoever watches the mark; None never marks. A LiveMigrate instance not (yet) migratable
// waits: its migration would be refused.
func migratesOnEviction(vmi *v1.VirtualMachineInstance, cfg *clusterconfig.ClusterConfig) bool {
	strategy := cfg.EvictionStrategy
	if vmi.Spec.EvictionStrategy != nil {
		strategy = *vmi.Spec.EvictionStrategy
	}
	switch strategy {
	case v1.EvictionStrategyLiveMigrate, v1.EvictionStrategyLiveMigrateIfPossible:
		return vmi.IsMigratable()
	}
	return false
}

// newMigration is KubeVirt's evacuation migration: generated name, the node in an annotation.
func newMigration(vmi *v1.VirtualMachineInstance) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: GenerateName, Namespace: vmi.Namespace,
			Annotations: map[string]string{v1.EvacuationMigrationAnnotation: vmi.Status.EvacuationNodeName}},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
}
