package consolelog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is written by Follow and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestFollow: the follower waits for the file, copies it as it grows, follows a rotation as
// the launcher does it (rename to .1, a new file), starts over on truncation, and copies what
// is left when it is told to stop.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "console.log")
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, &out, 10*time.Millisecond) }()
	seen := func(want string) {
		t.Helper()
		require.Eventually(t, func() bool { return out.String() == want }, 5*time.Second, 5*time.Millisecond, "got %q", out.String())
	}

	time.Sleep(30 * time.Millisecond) // no file yet: it waits
	appendTo(t, path, "boot\n")
	seen("boot\n")
	appendTo(t, path, "HANGAR-GUEST-READY\n")
	seen("boot\nHANGAR-GUEST-READY\n")

	// Rotation: the last lines of the old file, then the new file's.
	appendTo(t, path, "last of the old\n")
	require.NoError(t, os.Rename(path, path+".1"))
	time.Sleep(30 * time.Millisecond)
	appendTo(t, path, "first of the new\n")
	seen("boot\nHANGAR-GUEST-READY\nlast of the old\nfirst of the new\n")

	// Truncated in place: read from the start again.
	require.NoError(t, os.WriteFile(path, []byte("x\n"), 0o644))
	seen("boot\nHANGAR-GUEST-READY\nlast of the old\nfirst of the new\nx\n")

	appendTo(t, path, "at the end")
	cancel()
	require.NoError(t, <-done)
	assert.True(t, strings.HasSuffix(out.String(), "x\nat the end"), "what was written before the stop is copied: %q", out.String())
}

func TestFollowStopsWithoutAFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var out syncBuffer
	require.NoError(t, Follow(ctx, filepath.Join(t.TempDir(), "none"), &out, 10*time.Millisecond))
	assert.Empty(t, out.String())
}
