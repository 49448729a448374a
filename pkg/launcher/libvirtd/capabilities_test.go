package libvirtd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const qemu = "/usr/bin/qemu-system-x86_64"

// TestCapabilitiesFile: the name libvirt gives its cache file of a binary (seen in a launcher
// pod: the SHA-256 of the binary's path).
func TestCapabilitiesFile(t *testing.T) {
	assert.Equal(t, "/s/cache/libvirt/qemu/cache/capabilities/926803a9278e445ec919c2b6cbd8c1c449c75b26dcb1686b774314180376c725.xml",
		CapabilitiesFile("/s", qemu))
}

func TestCheckCapabilities(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{name: "libvirt's file", data: "<qemuCaps>\n  <emulator>" + qemu + "</emulator>\n  <flag name='sdl'/>\n</qemuCaps>\n"},
		{name: "another binary's", data: "<qemuCaps><emulator>/usr/bin/qemu-system-i386</emulator></qemuCaps>", wantErr: `not of "` + qemu + `"`},
		{name: "another document", data: "<domainCapabilities><emulator>" + qemu + "</emulator></domainCapabilities>", wantErr: "expected element type <qemuCaps>"},
		{name: "a second document after it", data: "<qemuCaps><emulator>" + qemu + "</emulator></qemuCaps><qemuCaps/>", wantErr: "more than one document"},
		{name: "not XML", data: "qemuCaps", wantErr: "EOF"},
		{name: "too big", data: "<qemuCaps><emulator>" + qemu + "</emulator>" + strings.Repeat(" ", MaxCapabilitiesSize) + "</qemuCaps>", wantErr: "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCapabilities([]byte(tt.data), qemu)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// TestSeedCapabilities: the file lands where libvirt looks, private to the launcher's user,
// and never replaces one libvirt wrote.
func TestSeedCapabilities(t *testing.T) {
	dir := t.TempDir()
	data := []byte("<qemuCaps><emulator>" + qemu + "</emulator></qemuCaps>")
	path, err := SeedCapabilities(dir, qemu, data)
	require.NoError(t, err)
	assert.Equal(t, CapabilitiesFile(dir, qemu), path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	parent, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), parent.Mode().Perm())

	_, err = SeedCapabilities(dir, qemu, data)
	assert.ErrorIs(t, err, os.ErrExist)
	_, err = SeedCapabilities(t.TempDir(), qemu, []byte("<qemuCaps/>"))
	assert.Error(t, err, "no emulator")
}

// TestWithoutPerFeatureCPUQueries: the flag's line goes and nothing else changes.
func TestWithoutPerFeatureCPUQueries(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{
			name: "libvirt's file",
			data: "<qemuCaps>\n  <flag name='cpu-cache'/>\n  <flag name='cpu-unavailable-features'/>\n  <flag name='cpu-max'/>\n</qemuCaps>\n",
			want: "<qemuCaps>\n  <flag name='cpu-cache'/>\n  <flag name='cpu-max'/>\n</qemuCaps>\n",
		},
		{
			name: "without the flag: unchanged",
			data: "<qemuCaps>\n  <flag name='cpu-max'/>\n</qemuCaps>\n",
			want: "<qemuCaps>\n  <flag name='cpu-max'/>\n</qemuCaps>\n",
		},
		{
			name: "on one line",
			data: "<qemuCaps><flag name='cpu-unavailable-features'/><flag name='sdl'/></qemuCaps>",
			want: "<qemuCaps><flag name='sdl'/></qemuCaps>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.data)
			assert.Equal(t, tt.want, string(WithoutPerFeatureCPUQueries(data)))
			assert.Equal(t, tt.data, string(data), "the input stays as it was")
		})
	}
}
