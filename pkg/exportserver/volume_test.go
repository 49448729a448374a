package exportserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVolume(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    Volume
		wantErr string
	}{
		{spec: "disk-1=kubevirt:/export/disk-1", want: Volume{Name: "disk-1", Kind: KindKubeVirt, Path: "/export/disk-1"}},
		{spec: "dev=block:/export/dev/disk.img", want: Volume{Name: "dev", Kind: KindBlock, Path: "/export/dev/disk.img"}},
		{spec: "files=archive:/export/files", want: Volume{Name: "files", Kind: KindArchive, Path: "/export/files"}},
		{spec: "a=archive:/x:y", want: Volume{Name: "a", Kind: KindArchive, Path: "/x:y"}},
		{spec: "disk-1", wantErr: "NAME=KIND:PATH"},
		{spec: "disk-1=/export/disk-1", wantErr: "NAME=KIND:PATH"},
		{spec: "Disk=kubevirt:/export/d", wantErr: "name"},
		{spec: "../x=kubevirt:/export/d", wantErr: "name"},
		{spec: "a/b=kubevirt:/export/d", wantErr: "name"},
		{spec: "=kubevirt:/export/d", wantErr: "name"},
		{spec: "-a=kubevirt:/export/d", wantErr: "name"},
		{spec: "a=raw:/export/d", wantErr: `kind "raw"`},
		{spec: "a=:/export/d", wantErr: `kind ""`},
		{spec: "a=archive:export/d", wantErr: "not absolute"},
		{spec: "a=archive:", wantErr: "not absolute"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseVolume(tc.spec)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.spec, got.String(), "String writes what ParseVolume reads")
		})
	}
}
