package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
)

// TestPrepareVolumesFindsBlockClaims: a claim is a block device when its device path holds
// one, an image file otherwise; a character device at that path (what a container's /dev has
// anyway) is not a claim.
func TestPrepareVolumesFindsBlockClaims(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, l domain.Layout)
		wantBlock bool
		wantErr   string
	}{
		{
			name: "a block device at the device path",
			setup: func(t *testing.T, l domain.Layout) {
				// A node for loop0's numbers: only its type matters, nothing opens it.
				err := unix.Mknod(l.PVCBlock("data"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0)))
				if errors.Is(err, unix.EPERM) {
					t.Skip("mknod needs CAP_MKNOD (the tests run as root in CI)")
				}
				require.NoError(t, err)
			},
			wantBlock: true,
		},
		{
			name:  "an image file in the claim's directory",
			setup: func(t *testing.T, l domain.Layout) { writeImage(t, l.PVCFile("data")) },
		},
		{
			name: "a character device at the device path is not the claim: the image is",
			setup: func(t *testing.T, l domain.Layout) {
				require.NoError(t, os.Symlink("/dev/null", l.PVCBlock("data")))
				writeImage(t, l.PVCFile("data"))
			},
		},
		{
			name:    "a character device alone is no claim",
			setup:   func(t *testing.T, l domain.Layout) { require.NoError(t, os.Symlink("/dev/null", l.PVCBlock("data"))) },
			wantErr: "neither block device",
		},
		{
			name:    "nothing at all",
			setup:   func(*testing.T, domain.Layout) {},
			wantErr: "neither block device",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := domain.Layout{EphemeralDir: filepath.Join(dir, "run"), PVCDir: filepath.Join(dir, "vmi-disks"), BlockDir: filepath.Join(dir, "dev")}
			require.NoError(t, os.MkdirAll(l.BlockDir, 0o755))
			tt.setup(t, l)
			vmi := &v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Volumes: []v1.Volume{{
				Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}},
			}}}}
			opts := domain.Options{Layout: l}
			err := prepareVolumes(context.Background(), vmi, &Config{}, &opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantBlock, opts.BlockVolumes["data"])
		})
	}
}

func writeImage(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, nil, 0o644))
}

// TestPrepareVolumesCloudInitFromMountedSecrets: the NoCloud ISO carries the user and network
// data of the Secrets the pod mounted, found by the names the instance gives; a Secret that is
// not there fails the preparation rather than booting the guest without its data.
func TestPrepareVolumesCloudInitFromMountedSecrets(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	for name, data := range map[string]map[string]string{
		"seed": {"userData": "#cloud-config\nruncmd:\n - echo HANGAR-SECRET-USERDATA\n"},
		"net":  {"networkdata": "version: 2 # HANGAR-SECRET-NETWORK\n"},
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(secrets, name), 0o755))
		for k, v := range data {
			require.NoError(t, os.WriteFile(filepath.Join(secrets, name, k), []byte(v), 0o644))
		}
	}
	ci := func(src v1.CloudInitNoCloudSource) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Volumes: []v1.Volume{{
			Name: "ci", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &src},
		}}}}
	}
	l := domain.Layout{EphemeralDir: filepath.Join(dir, "run")}
	cfg := &Config{SecretsDir: secrets}

	err := prepareVolumes(context.Background(), ci(v1.CloudInitNoCloudSource{
		UserDataSecretRef: &corev1.LocalObjectReference{Name: "seed"}, NetworkDataSecretRef: &corev1.LocalObjectReference{Name: "net"},
	}), cfg, &domain.Options{Layout: l})
	require.NoError(t, err)
	iso, err := os.ReadFile(l.CloudInitISO("ci"))
	require.NoError(t, err)
	// ISO 9660 stores file data as is: both payloads are in the image.
	assert.Contains(t, string(iso), "#cloud-config\nruncmd:\n - echo HANGAR-SECRET-USERDATA\n")
	assert.Contains(t, string(iso), "version: 2 # HANGAR-SECRET-NETWORK\n")

	err = prepareVolumes(context.Background(), ci(v1.CloudInitNoCloudSource{
		UserDataSecretRef: &corev1.LocalObjectReference{Name: "absent"},
	}), cfg, &domain.Options{Layout: domain.Layout{EphemeralDir: filepath.Join(dir, "run2")}})
	require.ErrorContains(t, err, "cloudInitNoCloud ci: user data: secret absent is not mounted")
	_, err = os.Stat(filepath.Join(dir, "run2", "cloud-init", "ci.iso"))
	assert.True(t, os.IsNotExist(err), "no ISO without its data")
}
