//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

var tickPattern = regexp.MustCompile(`tick-(\d+)`)

// lastTick is the highest counter value the console has shown.
func lastTick(s *stream) int {
	last := -1
	for _, m := range tickPattern.FindAllStringSubmatch(s.output(), -1) {
		if n, err := strconv.Atoi(m[1]); err == nil && n > last {
			last = n
		}
	}
	return last
}

// startCounter boots an instance and starts a counter on its serial console.
func startCounter(t *testing.T, ns, name string) (*v1.VirtualMachineInstance, *stream) {
	t.Helper()
	ctx := context.Background()
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: guestSpec(),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	console := attach(t, ns, name, "console")
	vmi := waitVMI(t, ns, name, 90*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && v.Status.NodeName != "" && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
	})
	console.typeUntil(t, "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 1; done &", "tick-2")
	return vmi, console
}

// migrate creates a migration of the instance and waits until it ends.
func migrate(t *testing.T, ns, vmiName string) *v1.VirtualMachineInstanceMigration {
	t.Helper()
	ctx := context.Background()
	migs := hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns)
	mig, err := migs.Create(ctx, &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "migrate-" + vmiName + "-"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mig, err = migs.Get(ctx, mig.Name, metav1.GetOptions{})
		return err == nil && (mig.Status.Phase == v1.MigrationSucceeded || mig.Status.Phase == v1.MigrationFailed)
	}, 4*time.Minute, time.Second, "migration %s: %+v", mig.Name, mig.Status)
	return mig
}

// TestLiveMigrationKeepsTheGuestRunning: a guest counting on its serial console moves to the
// other node; the counter never restarts, the instance's node and address change, its
// console reaches the guest on the new node, and the source launcher pod is gone.
func TestLiveMigrationKeepsTheGuestRunning(t *testing.T) {
	nodeNames(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-migrate")
	before, console := startCounter(t, ns, "mover")
	sourcePods := launcherPods(t, ns, before.UID)
	require.Len(t, sourcePods, 1)

	mig := migrate(t, ns, "mover")
	require.Equal(t, v1.MigrationSucceeded, mig.Status.Phase, "migration: %+v", mig.Status.MigrationState)
	tickAtMigration := lastTick(console)

	after := waitVMI(t, ns, "mover", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.NodeName != before.Status.NodeName
	})
	assert.Equal(t, v1.Running, after.Status.Phase)
	ms := after.Status.MigrationState
	require.NotNil(t, ms)
	assert.True(t, ms.Completed)
	assert.Equal(t, before.Status.NodeName, ms.SourceNode)
	assert.Equal(t, after.Status.NodeName, ms.TargetNode)
	assert.NotNil(t, ms.StartTimestamp)
	assert.NotNil(t, ms.EndTimestamp)
	t.Logf("migrated %s -> %s in %s", ms.SourceNode, ms.TargetNode, ms.EndTimestamp.Sub(ms.StartTimestamp.Time))

	require.Eventually(t, func() bool {
		pods := launcherPods(t, ns, before.UID)
		return len(pods) == 1 && pods[0].Spec.NodeName == after.Status.NodeName
	}, 60*time.Second, 500*time.Millisecond, "the source launcher pod goes, the target's stays")
	require.Eventually(t, func() bool {
		v, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "mover", metav1.GetOptions{})
		return err == nil && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != before.Status.Interfaces[0].IP
	}, 30*time.Second, 500*time.Millisecond, "the instance's address becomes the target pod's")

	// The console on the new node shows the same guest: its counter goes on from where it was.
	moved := attach(t, ns, "mover", "console")
	require.Eventually(t, func() bool { return lastTick(moved) > tickAtMigration },
		30*time.Second, 200*time.Millisecond, "the counter goes on after tick-%d; saw %q", tickAtMigration, moved.output())
	assert.NotContains(t, moved.output(), "HANGAR-GUEST-READY", "the guest did not boot again")
	first := tickPattern.FindStringSubmatch(moved.output())
	require.NotNil(t, first)
	n, _ := strconv.Atoi(first[1])
	assert.GreaterOrEqual(t, n, tickAtMigration-1, "the counter did not restart")
}

// TestDrainMovesLiveMigrateGuests: `kubectl drain` of a node with three LiveMigrate guests
// empties it with every guest alive on the other node (its counter never restarts); a VM
// whose guest has evictionStrategy None is stopped by the drain and started again elsewhere
// by its runStrategy, as KubeVirt documents.
func TestDrainMovesLiveMigrateGuests(t *testing.T) {
	nodes := nodeNames(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-drain")
	source := nodes[0]
	// Everything starts on the source node: the other one is cordoned meanwhile.
	_, err := kubectl(t, "cordon", nodes[1])
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = kubectl(t, "uncordon", nodes[0]); _, _ = kubectl(t, "uncordon", nodes[1]) })

	consoles := map[string]*stream{}
	uids := map[string]string{}
	for _, name := range []string{"live-a", "live-b", "live-c"} {
		spec := guestSpec()
		spec.EvictionStrategy = ptr.To(v1.EvictionStrategyLiveMigrate)
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, &v1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	stopped := guestSpec()
	stopped.EvictionStrategy = ptr.To(v1.EvictionStrategyNone)
	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "restarts"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: stopped}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"live-a", "live-b", "live-c"} {
		consoles[name] = attach(t, ns, name, "console")
		vmi := waitVMI(t, ns, name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return v.Status.Phase == v1.Running && v.Status.NodeName == source
		})
		uids[name] = string(vmi.UID)
		consoles[name].typeUntil(t, "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 1; done &", "tick-2")
	}
	restartsBefore := waitVMI(t, ns, "restarts", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && v.Status.NodeName == source
	})
	_, err = kubectl(t, "uncordon", nodes[1])
	require.NoError(t, err)

	// As a user types it.
	out, err := kubectl(t, "drain", source, "--ignore-daemonsets", "--delete-emptydir-data",
		"--pod-selector", "kubevirt.io=virt-launcher", "--timeout", "8m")
	require.NoError(t, err, "kubectl drain: %s", out)
	t.Logf("kubectl drain:\n%s", out)

	for _, name := range []string{"live-a", "live-b", "live-c"} {
		vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, uids[name], string(vmi.UID), "%s is the same instance", name)
		assert.Equal(t, v1.Running, vmi.Status.Phase, name)
		assert.Equal(t, nodes[1], vmi.Status.NodeName, "%s moved", name)
		moved := attach(t, ns, name, "console")
		before := lastTick(consoles[name])
		require.Eventually(t, func() bool { return lastTick(moved) > before }, 30*time.Second, 200*time.Millisecond,
			"%s: the counter goes on after tick-%d; saw %q", name, before, moved.output())
		assert.NotContains(t, moved.output(), "HANGAR-GUEST-READY", "%s did not boot again", name)
	}
	restarted := waitVMI(t, ns, "restarts", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != restartsBefore.UID && v.Status.Phase == v1.Running
	})
	assert.Equal(t, nodes[1], restarted.Status.NodeName, "the None guest was stopped and started on the other node")
}

// slowMigrations makes migrations crawl (1 MiB/s) while the test runs, through the cluster
// configuration, so that a test can interfere mid-flight.
func slowMigrations(t *testing.T) {
	setConfiguration(t, func(c *operatorv1alpha1.HangarConfiguration) {
		c.Migrations = &v1.MigrationConfiguration{BandwidthPerMigration: ptr.To(resource.MustParse("1Mi")),
			ProgressTimeout: ptr.To[int64](600), CompletionTimeoutPerGiB: ptr.To[int64](6000)}
	})
}

// runningMigration starts a migration of vmiName and waits until memory moves.
func runningMigration(t *testing.T, ns, vmiName string) *v1.VirtualMachineInstanceMigration {
	ctx := context.Background()
	migs := hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns)
	mig, err := migs.Create(ctx, &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cancel-" + vmiName + "-"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mig, err = migs.Get(ctx, mig.Name, metav1.GetOptions{})
		return err == nil && mig.Status.Phase == v1.MigrationRunning
	}, 3*time.Minute, 500*time.Millisecond, "migration %s runs: %+v", mig.Name, mig.Status)
	return mig
}

// TestCancelledMigrationKeepsTheGuestOnTheSource: deleting a migration mid-flight aborts
// it; the guest runs on on its node, and the target pod goes.
func TestCancelledMigrationKeepsTheGuestOnTheSource(t *testing.T) {
	nodeNames(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-cancel")
	slowMigrations(t)
	before, console := startCounter(t, ns, "stays")
	mig := runningMigration(t, ns, "stays")
	require.NoError(t, hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).Delete(ctx, mig.Name, metav1.DeleteOptions{}))
	after := waitVMI(t, ns, "stays", 2*time.Minute, func(v *v1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return ms != nil && ms.MigrationUid == mig.UID && ms.Failed
	})
	assert.Equal(t, before.Status.NodeName, after.Status.NodeName)
	assert.Equal(t, v1.Running, after.Status.Phase)
	assert.Equal(t, v1.MigrationAbortSucceeded, after.Status.MigrationState.AbortStatus)
	require.Eventually(t, func() bool { return len(launcherPods(t, ns, before.UID)) == 1 }, time.Minute, 500*time.Millisecond, "the target pod goes")
	n := lastTick(console)
	require.Eventually(t, func() bool { return lastTick(console) > n+1 }, 20*time.Second, 200*time.Millisecond, "the guest runs on")
}

// TestMigrationWhoseTargetDiesFails: the target pod dies mid-flight; the guest runs on on
// the source and the migration is Failed with a reason. The next migration, to the same node
// (the only other one), succeeds: nothing of the failed one's target is left in its way.
func TestMigrationWhoseTargetDiesFails(t *testing.T) {
	nodeNames(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-target-dies")
	slowMigrations(t)
	before, console := startCounter(t, ns, "survivor")
	mig := runningMigration(t, ns, "survivor")
	targets, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1.MigrationJobLabel + "=" + string(mig.UID)})
	require.NoError(t, err)
	require.Len(t, targets.Items, 1)
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, targets.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	require.Eventually(t, func() bool {
		mig, err = hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).Get(ctx, mig.Name, metav1.GetOptions{})
		return err == nil && mig.Status.Phase == v1.MigrationFailed
	}, 2*time.Minute, 500*time.Millisecond, "the migration fails: %+v", mig.Status)
	require.NotNil(t, mig.Status.MigrationState)
	assert.NotEmpty(t, mig.Status.MigrationState.FailureReason)
	t.Logf("failure reason: %s", mig.Status.MigrationState.FailureReason)
	vmi := waitVMI(t, ns, "survivor", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, before.Status.NodeName, vmi.Status.NodeName)
	n := lastTick(console)
	require.Eventually(t, func() bool { return lastTick(console) > n+1 }, 20*time.Second, 200*time.Millisecond, "the guest runs on")

	setConfiguration(t, func(c *operatorv1alpha1.HangarConfiguration) { c.Migrations = nil })
	retried := migrate(t, ns, "survivor")
	require.Equal(t, v1.MigrationSucceeded, retried.Status.Phase, "the retry: %+v", retried.Status.MigrationState)
	vmi = waitVMI(t, ns, "survivor", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.NodeName != before.Status.NodeName
	})
	moved := attach(t, ns, "survivor", "console")
	n = lastTick(console)
	require.Eventually(t, func() bool { return lastTick(moved) > n }, 30*time.Second, 200*time.Millisecond,
		"the counter goes on after tick-%d on %s; saw %q", n, vmi.Status.NodeName, moved.output())
}
