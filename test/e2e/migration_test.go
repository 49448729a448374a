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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
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
