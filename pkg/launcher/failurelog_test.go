package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailureLogs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "cache", "vm-swtpm.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o700))
	require.NoError(t, os.WriteFile(log, []byte(strings.Repeat("x", 2*maxFailureLog)+"swtpm_setup: the reason\n"), 0o600))
	outside := filepath.Join(t.TempDir(), "other.log")
	require.NoError(t, os.WriteFile(outside, []byte("not ours"), 0o600))

	tests := []struct {
		name string
		err  error
		want map[string]string
	}{
		{"a referenced log below the directory: its end", errors.New("internal error: Could not run '/usr/bin/swtpm_setup'. exitstatus: 1; Check error log '" + log + "' for details."),
			map[string]string{log: strings.Repeat("x", maxFailureLog-len("swtpm_setup: the reason\n")) + "swtpm_setup: the reason\n"}},
		{"a log elsewhere is not read", errors.New("Check error log '" + outside + "' for details"), map[string]string{}},
		{"a log through .. is not read", errors.New("Check error log '" + filepath.Join(dir, "..", filepath.Base(filepath.Dir(outside)), "other.log") + "' for details"), map[string]string{}},
		{"a missing log", errors.New("Check error log '" + filepath.Join(dir, "gone.log") + "' for details"), map[string]string{}},
		{"no reference", errors.New("start domain: boom"), map[string]string{}},
		{"no error", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, failureLogs(tt.err, dir))
		})
	}
}
