package migration

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// KubeVirt's migration metrics, read from the migrations' cache at each scrape: how many are
// in each phase, and per migration whether it succeeded or failed and when it ran.
var (
	phaseGauges = map[v1.VirtualMachineInstanceMigrationPhase]*metrics.Desc{
		v1.MigrationPhaseUnset: metrics.NewDesc("kubevirt_vmi_migrations_in_unset_phase", "Number of current migrations in unset phase.", nil, nil, metrics.ALPHA, ""),
		v1.MigrationPending:    metrics.NewDesc("kubevirt_vmi_migrations_in_pending_phase", "Number of current pending migrations.", nil, nil, metrics.ALPHA, ""),
		v1.MigrationScheduling: metrics.NewDesc("kubevirt_vmi_migrations_in_scheduling_phase", "Number of current scheduling migrations.", nil, nil, metrics.ALPHA, ""),
		v1.MigrationRunning:    metrics.NewDesc("kubevirt_vmi_migrations_in_running_phase", "Number of current running migrations.", nil, nil, metrics.ALPHA, ""),
	}
	perMigration  = []string{"vmi", "namespace", "vmim"}
	succeededDesc = metrics.NewDesc("kubevirt_vmi_migration_succeeded", "Indicates if the VMI migration succeeded.", perMigration, nil, metrics.ALPHA, "")
	failedDesc    = metrics.NewDesc("kubevirt_vmi_migration_failed", "Indicates if the VMI migration failed.", perMigration, nil, metrics.ALPHA, "")
	startDesc     = metrics.NewDesc("kubevirt_vmi_migration_start_time_seconds", "The time at which the migration started.", perMigration, nil, metrics.ALPHA, "")
	endDesc       = metrics.NewDesc("kubevirt_vmi_migration_end_time_seconds", "The time at which the migration ended.", perMigration, nil, metrics.ALPHA, "")
)

type collector struct {
	metrics.BaseStableCollector
	lister atomic.Pointer[listers.VirtualMachineInstanceMigrationLister]
}

var (
	registerOnce sync.Once
	theCollector collector
)

// RegisterMetrics serves the migration metrics from lister's cache (the latest controller's).
func RegisterMetrics(lister listers.VirtualMachineInstanceMigrationLister) {
	theCollector.lister.Store(&lister)
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(&theCollector) })
}

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range phaseGauges {
		ch <- d
	}
	ch <- succeededDesc
	ch <- failedDesc
	ch <- startDesc
	ch <- endDesc
}

func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	lister := c.lister.Load()
	if lister == nil {
		return
	}
	migs, err := (*lister).List(labels.Everything())
	if err != nil {
		return
	}
	counts := map[v1.VirtualMachineInstanceMigrationPhase]float64{}
	for _, m := range migs {
		phase := m.Status.Phase
		if phase == v1.MigrationScheduled || phase == v1.MigrationPreparingTarget || phase == v1.MigrationTargetReady {
			phase = v1.MigrationScheduling // KubeVirt counts these with scheduling
		}
		counts[phase]++
		lv := []string{m.Spec.VMIName, m.Namespace, m.Name}
		switch m.Status.Phase {
		case v1.MigrationSucceeded:
			ch <- metrics.NewLazyConstMetric(succeededDesc, metrics.GaugeValue, 1, lv...)
		case v1.MigrationFailed:
			ch <- metrics.NewLazyConstMetric(failedDesc, metrics.GaugeValue, 1, lv...)
		}
		if ms := m.Status.MigrationState; ms != nil {
			if ms.StartTimestamp != nil {
				ch <- metrics.NewLazyConstMetric(startDesc, metrics.GaugeValue, float64(ms.StartTimestamp.Unix()), lv...)
			}
			if ms.EndTimestamp != nil {
				ch <- metrics.NewLazyConstMetric(endDesc, metrics.GaugeValue, float64(ms.EndTimestamp.Unix()), lv...)
			}
		}
	}
	for phase, d := range phaseGauges {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, counts[phase])
	}
}
