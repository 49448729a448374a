package handler

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// The watch wakes its instance when the command socket appears (bound in place, or renamed
// into place), not for other files, and not after it was removed.
func TestSocketWatchWakesOnTheCommandSocketOnly(t *testing.T) {
	pods := newTestPods(t)
	vmi := scheduledVMI("w1")
	dirPath := pods.socketDir(vmi)
	require.NoError(t, os.MkdirAll(dirPath, 0o755))
	dir, err := pods.root.Dir(testPodUID("w1"), layout.SocketVolume)
	require.NoError(t, err)
	defer dir.Close()

	w, err := newSocketWatch()
	require.NoError(t, err)
	ctx := t.Context()
	go w.run(ctx)
	woken := make(chan struct{}, 8)
	remove, err := w.add(dir, func() { woken <- struct{}{} })
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(filepath.Join(dirPath, "console.sock"), nil, 0o600))
	ln := listenUnix(t, filepath.Join(dirPath, api.SocketName))
	defer ln.Close()
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("the socket appeared and nothing woke")
	}
	assert.Empty(t, woken, "one wake for the socket, none for the other file")

	remove()
	require.NoError(t, os.Remove(filepath.Join(dirPath, api.SocketName)))
	ln2 := listenUnix(t, filepath.Join(dirPath, api.SocketName))
	defer ln2.Close()
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, woken, "no wake after remove")
}

// A launcher that starts listening after the handler found its pod's directory is synced at
// once: the sync waits on the watch, whose safety recheck (10 s) is far later.
func TestHandlerStartsTheGuestWhenTheLauncherListens(t *testing.T) {
	vmi := scheduledVMI("w2")
	f := newFixture(t, vmi)
	require.NotNil(t, f.c.watch, "inotify is available here")
	require.NoError(t, os.MkdirAll(f.pods.socketDir(vmi), 0o755))
	require.Eventually(t, func() bool {
		f.c.mu.Lock()
		l := f.c.launchers["ns/guest"]
		f.c.mu.Unlock()
		if l == nil {
			return false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.unwatch != nil
	}, 5*time.Second, 10*time.Millisecond, "the handler waits on the launcher's socket")

	start := time.Now()
	startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{})
	f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Less(t, time.Since(start), launcherSocketSafetyRecheck/2, "woken by the watch, not by the recheck")
}
