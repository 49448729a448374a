package launcher

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
)

const testCapabilities = "<qemuCaps>\n  <emulator>" + domain.DefaultEmulator + "</emulator>\n  <qemuctime>1</qemuctime>\n</qemuCaps>\n"

// probedCapabilities has the flag that makes libvirt read a guest's CPU one property at a time.
const probedCapabilities = "<qemuCaps>\n  <emulator>" + domain.DefaultEmulator + "</emulator>\n  <flag name='cpu-unavailable-features'/>\n  <flag name='cpu-max'/>\n</qemuCaps>\n"

func TestSyncSeedsQEMUCapabilities(t *testing.T) {
	withFeatures := testVMI()
	withFeatures.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "pcid", Policy: "require"}}}
	tests := []struct {
		name string
		vmi  *v1.VirtualMachineInstance
		caps string
		want string // the cache file after the start; "" for none
	}{
		{name: "virt-handler's file goes into libvirt's cache", caps: testCapabilities, want: testCapabilities},
		{name: "without per-feature CPU queries", caps: probedCapabilities,
			want: "<qemuCaps>\n  <emulator>" + domain.DefaultEmulator + "</emulator>\n  <flag name='cpu-max'/>\n</qemuCaps>\n"},
		{name: "as probed for a guest that lists CPU features", vmi: withFeatures, caps: probedCapabilities, want: probedCapabilities},
		{name: "none sent: libvirt probes", caps: ""},
		{name: "another emulator's: not seeded, the guest starts anyway", caps: "<qemuCaps><emulator>/usr/bin/qemu-system-aarch64</emulator></qemuCaps>"},
		{name: "not a capabilities file: not seeded", caps: "<domain/>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hv := newFake()
			l := newTestLauncher(t, hv)
			l.cfg.LibvirtStateDir = t.TempDir()
			vmi := tt.vmi
			if vmi == nil {
				vmi = testVMI()
			}
			s, err := l.Sync(context.Background(), api.SyncRequest{VMI: vmi, QEMUCapabilities: tt.caps})
			require.NoError(t, err)
			assert.Equal(t, api.PhaseRunning, s.Phase)
			got, err := os.ReadFile(libvirtd.CapabilitiesFile(l.cfg.LibvirtStateDir, domain.DefaultEmulator))
			if tt.want == "" {
				assert.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// TestSeededCapabilitiesReport: the launcher tells whether libvirt kept the file it seeded
// or probed QEMU and rewrote it.
func TestSeededCapabilitiesReport(t *testing.T) {
	l := newTestLauncher(t, newFake())
	l.cfg.LibvirtStateDir = t.TempDir()
	seeded := l.seedQEMUCapabilities(testCapabilities, testVMI())
	assert.True(t, seeded.report(), "untouched")

	path := libvirtd.CapabilitiesFile(l.cfg.LibvirtStateDir, domain.DefaultEmulator)
	later := time.Now().Add(time.Second)
	require.NoError(t, os.WriteFile(path, []byte(testCapabilities+"<!-- probed again -->"), 0o600))
	require.NoError(t, os.Chtimes(path, later, later))
	assert.False(t, seeded.report(), "rewritten by libvirt")

	assert.False(t, seededCapabilities{}.report(), "nothing seeded")
}
