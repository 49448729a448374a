//go:build libvirt

package node

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// carryStreams is the handlers' part of a migration, on one host: it keeps upstreams open in
// the source launcher and connects each stream the source puts to use to the target
// launcher (between nodes, the two handlers carry it over mutual TLS; see pkg/handler).
func carryStreams(ctx context.Context, t *testing.T, source, target *podsockets.Dir, uid string) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				up, err := source.Dial(tunnel.SocketName)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				stop := context.AfterFunc(ctx, func() { up.Close() })
				if tunnel.WriteLine(up, tunnel.VerbSource, uid) != nil {
					up.Close()
					continue
				}
				stream, _, err := tunnel.ReadLine(up)
				stop()
				if err != nil {
					up.Close()
					continue
				}
				down, err := target.Dial(tunnel.SocketName)
				if err != nil {
					up.Close()
					continue
				}
				if tunnel.WriteLine(down, tunnel.VerbTarget, stream) != nil || tunnel.ReadAnswer(down) != nil {
					t.Logf("target refused stream %s", stream)
					up.Close()
					down.Close()
					continue
				}
				go tunnel.Splice(up, down)
			}
		}()
	}
	return &wg
}

// TestLauncherLiveMigration: a running guest moves from one launcher to another through
// their migration sockets; the source ends Succeeded (Migrated), the target runs the guest,
// whose console keeps printing on the target.
func TestLauncherLiveMigration(t *testing.T) {
	vmi := kernelBootVMI("mover")
	source := startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
	st := source.sync()
	require.Equal(t, api.PhaseRunning, st.Phase, "source: %+v", st)
	source.waitConsoleLog(banner, 60*time.Second)

	target := startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
	tst, err := target.client.PrepareMigrationTarget(context.Background(), api.MigrationTargetRequest{VMI: vmi, UID: "m-1"})
	require.NoError(t, err)
	require.Equal(t, api.PhaseIncoming, tst.Phase)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	carryStreams(ctx, t, source.dir, target.dir, "m-1")

	start := time.Now()
	_, err = source.client.Migrate(context.Background(), api.MigrateRequest{UID: "m-1", Options: api.MigrationOptions{ProgressTimeoutSeconds: 60, CompletionTimeoutPerGiBSeconds: 300}})
	require.NoError(t, err)
	var last api.State
	require.Eventually(t, func() bool {
		last = source.State()
		return last.Migration != nil && last.Migration.EndedAt != nil
	}, 3*time.Minute, 200*time.Millisecond, "the migration ends")
	took := time.Since(start)
	require.True(t, last.Migration.Completed, "migration: %+v", last.Migration)
	assert.Equal(t, api.PhaseSucceeded, last.Phase)
	assert.Equal(t, "Migrated", last.Reason)
	require.Eventually(t, func() bool { return target.State().Phase == api.PhaseRunning }, 30*time.Second, 100*time.Millisecond,
		"target: %+v", target.State())
	writeFigure(t, "launcher live migration (128 MiB, TCG, one host)", took)

	// The guest answers on the target's console: the same guest (no new boot banner), alive.
	console, err := target.dir.Dial(api.ConsoleSocketName)
	require.NoError(t, err)
	defer console.Close()
	var seen strings.Builder
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := console.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	require.Eventually(t, func() bool {
		_, _ = console.Write([]byte("echo moved-$((40+2))\r"))
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(seen.String(), "moved-42")
	}, 30*time.Second, 100*time.Millisecond, "the guest answers on the target's console")
	mu.Lock()
	assert.NotContains(t, seen.String(), banner, "the guest did not boot again")
	mu.Unlock()
}

// slowMigration starts a migration held at 1 MiB/s, so that it is still under way when the
// test interferes, and returns both launchers.
func slowMigration(t *testing.T, name string) (source, target *launcherRun) {
	vmi := kernelBootVMI(name)
	source = startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
	require.Equal(t, api.PhaseRunning, source.sync().Phase)
	source.waitConsoleLog(banner, 60*time.Second)
	target = startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
	_, err := target.client.PrepareMigrationTarget(context.Background(), api.MigrationTargetRequest{VMI: vmi, UID: "m-slow"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	carryStreams(ctx, t, source.dir, target.dir, "m-slow")
	_, err = source.client.Migrate(context.Background(), api.MigrateRequest{UID: "m-slow",
		Options: api.MigrationOptions{BandwidthMiB: 1, ProgressTimeoutSeconds: 600, CompletionTimeoutPerGiBSeconds: 6000}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m := source.State().Migration
		return m != nil && m.DataProcessedBytes > 0
	}, 60*time.Second, 100*time.Millisecond, "memory flows: %+v", source.State().Migration)
	return source, target
}

// migrationEnd waits until the source's migration ends.
func migrationEnd(t *testing.T, source *launcherRun) api.State {
	var st api.State
	require.Eventually(t, func() bool {
		st = source.State()
		return st.Migration != nil && st.Migration.EndedAt != nil
	}, 60*time.Second, 100*time.Millisecond, "the migration ends: %+v", st.Migration)
	return st
}

// TestLauncherMigrationAbortKeepsTheGuestOnTheSource: a cancel mid-flight stops the
// migration; the guest runs on where it was.
func TestLauncherMigrationAbortKeepsTheGuestOnTheSource(t *testing.T) {
	source, _ := slowMigration(t, "abort")
	_, err := source.client.AbortMigration(context.Background(), "m-slow")
	require.NoError(t, err)
	st := migrationEnd(t, source)
	assert.True(t, st.Migration.Failed)
	assert.Equal(t, api.AbortSucceeded, st.Migration.AbortStatus)
	assert.Equal(t, api.PhaseRunning, st.Phase, "the guest runs on on the source")
}

// TestLauncherMigrationTargetDiesKeepsTheGuestOnTheSource: the target's pod dies
// mid-flight; the migration fails with a reason and the guest runs on on the source.
func TestLauncherMigrationTargetDiesKeepsTheGuestOnTheSource(t *testing.T) {
	source, target := slowMigration(t, "orphan")
	target.kill()
	st := migrationEnd(t, source)
	assert.True(t, st.Migration.Failed)
	assert.NotEmpty(t, st.Migration.Reason)
	t.Logf("failure: %s: %s", st.Migration.Reason, st.Migration.Message)
	assert.Equal(t, api.PhaseRunning, st.Phase, "the guest runs on on the source")
}
