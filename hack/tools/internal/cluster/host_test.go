package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveCreatedDir: an empty directory bound onto itself (as ip netns leaves /run/netns)
// is unmounted and removed; one with something in it stays, mounted or not.
func TestRemoveCreatedDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root (CI runs as root)")
	}
	bindSelf := func(t *testing.T, dir string) {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	tests := []struct {
		name        string
		mounts      int
		file        bool
		wantRemoved bool
	}{
		{name: "plain empty directory", wantRemoved: true},
		{name: "empty, bound onto itself", mounts: 1, wantRemoved: true},
		{name: "empty, bound onto itself twice", mounts: 2, wantRemoved: true},
		{name: "not empty", file: true},
		{name: "not empty, bound onto itself", mounts: 1, file: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "netns")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for range tc.mounts {
				bindSelf(t, dir)
			}
			if tc.file {
				if err := os.WriteFile(filepath.Join(dir, "ns"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := removeCreatedDir(dir)
			_, statErr := os.Stat(dir)
			switch {
			case tc.wantRemoved && err != nil:
				t.Fatalf("removeCreatedDir: %v", err)
			case tc.wantRemoved && !os.IsNotExist(statErr):
				t.Fatalf("%s still exists", dir)
			case !tc.wantRemoved && err == nil:
				t.Fatal("removeCreatedDir removed a directory with something in it")
			case !tc.wantRemoved && statErr != nil:
				t.Fatalf("%s is gone: %v", dir, statErr)
			}
		})
	}
}
