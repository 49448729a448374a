package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/exportserver"
)

// parse reads args as Main does, up to Validate.
func parse(args []string) (*Options, error) {
	o := NewOptions()
	fs := newFlagSet(o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := o.Complete(); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestOptions(t *testing.T) {
	const expires = "-expires=2026-11-29T08:00:00Z"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a bad volume spec", args: []string{expires, "-volume=disk"}, wantErr: "NAME=KIND:PATH"},
		{name: "a bad volume name", args: []string{expires, "-volume=Disk_1=kubevirt:/export/d"}, wantErr: "name"},
		{name: "a bad kind", args: []string{expires, "-volume=d=qcow2:/export/d"}, wantErr: `kind "qcow2"`},
		{name: "a relative path", args: []string{expires, "-volume=d=archive:export/d"}, wantErr: "not absolute"},
		{name: "a name twice", args: []string{expires, "-volume=d=archive:/a", "-volume=d=kubevirt:/b"}, wantErr: "given twice"},
		{name: "no volume", args: []string{expires}, wantErr: "at least one -volume"},
		{name: "no expiry", args: []string{"-volume=d=archive:/a"}, wantErr: "-expires is required"},
		{name: "a bad expiry", args: []string{"-expires=tomorrow", "-volume=d=archive:/a"}, wantErr: "-expires"},
		{name: "an unknown flag", args: []string{expires, "-volume=d=archive:/a", "-port=1"}, wantErr: "not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestControllerCommandLine parses the command line the export controller writes.
func TestControllerCommandLine(t *testing.T) {
	o, err := parse([]string{
		"-listen=:8443", "-cert=/etc/export/tls/tls.crt", "-key=/etc/export/tls/tls.key",
		"-token-file=/etc/export/token/token", "-expires=2026-11-29T08:00:00Z",
		"-volume=disk=kubevirt:/export/disk", "-volume=files=archive:/export/files",
		"-volume=dev=block:/export/dev/disk.img",
	})
	require.NoError(t, err)
	assert.Equal(t, ":8443", o.Listen)
	assert.Equal(t, "/etc/export/tls/tls.crt", o.CertFile)
	assert.Equal(t, "/etc/export/tls/tls.key", o.KeyFile)
	assert.Equal(t, "/etc/export/token/token", o.TokenFile)
	assert.Equal(t, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), o.Expires)
	assert.Equal(t, []exportserver.Volume{
		{Name: "disk", Kind: exportserver.KindKubeVirt, Path: "/export/disk"},
		{Name: "files", Kind: exportserver.KindArchive, Path: "/export/files"},
		{Name: "dev", Kind: exportserver.KindBlock, Path: "/export/dev/disk.img"},
	}, []exportserver.Volume(o.Volumes))
}

func TestMainExitStatus(t *testing.T) {
	assert.Equal(t, 2, Main([]string{"-volume=bad"}))
	assert.Equal(t, 2, Main([]string{"-volume=d=archive:/a"}), "no -expires")
	assert.Equal(t, 2, Main([]string{"-expires=2026-11-29T08:00:00Z", "-volume=d=archive:/a", "extra"}))
}
