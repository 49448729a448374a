package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func newMigration(name, vmi string) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi}}
}

// requireInvalid checks a 422 whose causes name field and whose message contains msg.
func requireInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	status := err.(apierrors.APIStatus).Status()
	var fields []string
	for _, c := range status.Details.Causes {
		fields = append(fields, c.Field)
	}
	assert.Contains(t, fields, field, "causes: %v", status.Details.Causes)
	assert.Contains(t, status.Message, msg)
}

func setMigratable(t *testing.T, ns, name string, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	ctx := context.Background()
	vmi, err := api.Client.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	vmi.Status.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceIsMigratable,
		Status: status, Reason: reason, Message: message}, metav1.Now())
	_, err = api.Client.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func finishMigration(t *testing.T, ns, name string, phase v1.VirtualMachineInstanceMigrationPhase) {
	t.Helper()
	ctx := context.Background()
	m, err := api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	m.Status.Phase = phase
	_, err = api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns).UpdateStatus(ctx, m, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func TestMigrationLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := "migrations"
	migrations := api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns)

	// Refused before anything is stored: 422 on spec.vmiName with KubeVirt's messages.
	_, err := migrations.Create(ctx, newMigration("no-vmi-name", ""), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.vmiName", "vmiName is missing")
	_, err = migrations.Create(ctx, newMigration("missing", "ghost"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.vmiName", `the VMI "migrations/ghost" does not exist`)
	_, err = api.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("pending"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = migrations.Create(ctx, newMigration("not-running", "pending"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.vmiName", "only a Running VMI can be migrated")

	runningInstance(t, ns, "rwo")
	setMigratable(t, ns, "rwo", corev1.ConditionFalse, v1.VirtualMachineInstanceReasonDisksNotMigratable, "cannot migrate VMI: PVC data is not shared")
	_, err = migrations.Create(ctx, newMigration("not-migratable", "rwo"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.vmiName", "Cannot migrate VMI, Reason: DisksNotLiveMigratable, Message: cannot migrate VMI: PVC data is not shared")

	// Accepted: labelled with the instance's name, status empty whatever the client sent.
	runningInstance(t, ns, "web")
	setMigratable(t, ns, "web", corev1.ConditionTrue, "", "")
	first := newMigration("first", "web")
	first.Status.Phase = v1.MigrationSucceeded
	first.Spec.AddedNodeSelector = map[string]string{"zone": "b"}
	created, err := migrations.Create(ctx, first, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web", created.Labels[v1.MigrationSelectorLabel])
	assert.Empty(t, created.Status.Phase)
	assert.Equal(t, map[string]string{"zone": "b"}, created.Spec.AddedNodeSelector)

	// One in flight at a time.
	_, err = migrations.Create(ctx, newMigration("second", "web"), metav1.CreateOptions{})
	requireInvalid(t, err, "spec.vmiName", fmt.Sprintf("in-flight migration detected. Active migration job (%s) is currently already in progress for VMI web.", created.UID))

	// The spec is immutable, and so is the selector label while in flight.
	created.Spec.VMIName = "rwo"
	_, err = migrations.Update(ctx, created, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec", "update of Migration object's spec is restricted")
	created, err = migrations.Get(ctx, "first", metav1.GetOptions{})
	require.NoError(t, err)
	created.Labels[v1.MigrationSelectorLabel] = "other"
	_, err = migrations.Update(ctx, created, metav1.UpdateOptions{})
	requireInvalid(t, err, "metadata.labels[kubevirt.io/vmi-name]", "in-flight migration")

	// The controller's status writes; a final phase is final; then the next one is welcome.
	finishMigration(t, ns, "first", v1.MigrationRunning)
	finishMigration(t, ns, "first", v1.MigrationSucceeded)
	m, err := migrations.Get(ctx, "first", metav1.GetOptions{})
	require.NoError(t, err)
	m.Status.Phase = v1.MigrationRunning
	_, err = migrations.UpdateStatus(ctx, m, metav1.UpdateOptions{})
	requireInvalid(t, err, "status.phase", "cannot leave the final phase Succeeded")
	_, err = migrations.Create(ctx, newMigration("second", "web"), metav1.CreateOptions{})
	require.NoError(t, err)

	// A dry run checks and stores nothing.
	runningInstance(t, ns, "dry")
	_, err = migrations.Create(ctx, newMigration("dry", "dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	_, err = migrations.Get(ctx, "dry", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a dry run stored the migration: %v", err)

	// Deleting an active migration (a cancel) is allowed.
	require.NoError(t, migrations.Delete(ctx, "second", metav1.DeleteOptions{}))
}

// TestMigrationConcurrentCreates races creates of migrations of one instance: exactly one wins.
func TestMigrationConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	ns := "migration-race"
	runningInstance(t, ns, "raced")
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(ctx,
				newMigration(fmt.Sprintf("racer-%d", i), "raced"), metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.Contains(t, err.Error(), "in-flight migration detected")
	}
	assert.Equal(t, 1, won)
	list, err := api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}

func TestMigrateAction(t *testing.T) {
	ctx := context.Background()
	for i, path := range actionPaths {
		t.Run(path.name, func(t *testing.T) {
			ns := fmt.Sprintf("migrate-%d", i)
			_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("vm", v1.RunStrategyAlways), metav1.CreateOptions{})
			require.NoError(t, err)
			migrations := api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns)

			code, body := put(t, path, ns, "vm", "migrate", "{}")
			assert.Equal(t, http.StatusConflict, code)
			assert.Contains(t, body, "VM is not running")
			code, _ = put(t, path, ns, "nothing", "migrate", "{}")
			assert.Equal(t, http.StatusNotFound, code)

			runningInstance(t, ns, "vm")
			code, body = put(t, path, ns, "vm", "migrate", `{"dryRun":["All"],"addedNodeSelector":{"zone":"b"}}`)
			require.Equal(t, http.StatusAccepted, code, body)
			list, err := migrations.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, list.Items, "a dry run created a migration")

			code, body = put(t, path, ns, "vm", "migrate", `{"addedNodeSelector":{"zone":"b"}}`)
			require.Equal(t, http.StatusAccepted, code, body)
			if path.acceptedBody == "" {
				assert.Empty(t, body)
			}
			list, err = migrations.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, list.Items, 1)
			m := list.Items[0]
			assert.True(t, strings.HasPrefix(m.Name, "kubevirt-migrate-vm-"), m.Name)
			assert.Equal(t, "vm", m.Spec.VMIName)
			assert.Equal(t, map[string]string{"zone": "b"}, m.Spec.AddedNodeSelector)

			code, body = put(t, path, ns, "vm", "migrate", "")
			assert.Equal(t, http.StatusUnprocessableEntity, code)
			assert.Contains(t, body, "in-flight migration detected")

			code, body = put(t, path, ns, "vm", "migrate", `{"addedNodeSelector":"not a map"}`)
			assert.Equal(t, http.StatusBadRequest, code, body)
		})
	}
}

func TestVirtctlMigrate(t *testing.T) {
	ctx := context.Background()
	ns := "virtctl-migrate"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("cli", v1.RunStrategyAlways), metav1.CreateOptions{})
	require.NoError(t, err)
	run := func(args ...string) (int, string) {
		return runVirtctl(api.Kubeconfig, nil, append([]string{"-n", ns}, args...)...)
	}
	migrations := api.Client.KubevirtV1().VirtualMachineInstanceMigrations(ns)

	code, out := run("migrate", "cli")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "VM is not running")
	code, out = run("migrate-cancel", "cli")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "found no migration to cancel for cli")

	runningInstance(t, ns, "cli")
	code, out = run("migrate", "cli", "--dry-run")
	require.Equal(t, 0, code, out)
	list, err := migrations.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)

	code, out = run("migrate", "cli", "--addedNodeSelector", "zone=b,rack=r1")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "VM cli was scheduled to migrate\n", out)
	list, err = migrations.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, map[string]string{"zone": "b", "rack": "r1"}, list.Items[0].Spec.AddedNodeSelector)

	code, out = run("migrate-cancel", "cli", "--dry-run")
	require.Equal(t, 0, code, out)
	list, err = migrations.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1, "a dry-run cancel deleted the migration")

	code, out = run("migrate-cancel", "cli")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "VM cli was scheduled to migrate-cancel")
	list, err = migrations.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}
