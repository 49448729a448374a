package procstat

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	// Fields 3-22 of a real line, after the command name.
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 250 40 7 3 20 0 12 0 98765 1000"
	tests := []struct {
		name    string
		raw     string
		want    Stat
		wantErr bool
	}{
		{name: "plain", raw: "42 (qemu-system-x86)" + tail,
			want: Stat{Comm: "qemu-system-x86", CPU: 2900 * time.Millisecond, ChildrenCPU: 100 * time.Millisecond, StartTicks: 98765}},
		{name: "spaces and parentheses in the command", raw: "42 (a) b (c)" + tail,
			want: Stat{Comm: "a) b (c", CPU: 2900 * time.Millisecond, ChildrenCPU: 100 * time.Millisecond, StartTicks: 98765}},
		{name: "no command", raw: "42 S 1 2 3", wantErr: true},
		{name: "too few fields", raw: "42 (x) S 1 2 3", wantErr: true},
		{name: "not a number", raw: "42 (x) S 1 2 3 0 -1 4194560 100 0 0 0 x 40 7 3 20 0 12 0 98765 1000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.raw)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	require.NoError(t, err)
	assert.NotEmpty(t, s.Comm)
	assert.NotZero(t, s.StartTicks)
	_, err = Read(-1)
	assert.Error(t, err)
}

// All finds this process, with the start time Started puts in the past, no earlier than boot.
func TestAllFindsThisProcess(t *testing.T) {
	all, err := All()
	require.NoError(t, err)
	self, ok := all[os.Getpid()]
	require.True(t, ok, "this process is missing")
	started, err := self.Started()
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), started, 10*time.Minute, "this test started moments ago")
	assert.False(t, started.After(time.Now()))
}

func TestCgroupSelf(t *testing.T) {
	cg, err := Cgroup(os.Getpid())
	require.NoError(t, err)
	assert.Contains(t, cg, ":/", "a line per hierarchy, hierarchy-ID:controllers:group")
	_, err = Cgroup(-1)
	assert.Error(t, err)
}
