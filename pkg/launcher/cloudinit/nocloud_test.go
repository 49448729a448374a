package cloudinit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// mountSecret lays a Secret out as the kubelet mounts a secret volume: each key a symlink to
// ..data/<key>, ..data a symlink to a timestamped directory holding the files.
func mountSecret(t *testing.T, secretsDir, name string, data map[string]string) {
	t.Helper()
	dir := filepath.Join(secretsDir, name)
	payload := filepath.Join(dir, "..2025_01_02_03_04_05.000000001")
	require.NoError(t, os.MkdirAll(payload, 0o755))
	require.NoError(t, os.Symlink(filepath.Base(payload), filepath.Join(dir, "..data")))
	for k, v := range data {
		require.NoError(t, os.WriteFile(filepath.Join(payload, k), []byte(v), 0o644))
		require.NoError(t, os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)))
	}
}

func TestForVolumeReadsMountedSecrets(t *testing.T) {
	secrets := t.TempDir()
	mountSecret(t, secrets, "seed", map[string]string{"userdata": "#cloud-config\nhostname: a\n", "networkdata": "version: 2\n", "other": "x"})
	mountSecret(t, secrets, "camel", map[string]string{"userData": "#!/bin/sh\necho camel\n", "networkData": "version: 1\n"})
	mountSecret(t, secrets, "both", map[string]string{"userdata": "lower", "userData": "camel"})
	mountSecret(t, secrets, "empty", map[string]string{})
	ref := func(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest"}}

	tests := []struct {
		name        string
		src         v1.CloudInitNoCloudSource
		wantUser    string
		wantNetwork string
		wantErr     string
	}{
		{name: "userdata and networkdata", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("seed"), NetworkDataSecretRef: ref("seed")},
			wantUser: "#cloud-config\nhostname: a\n", wantNetwork: "version: 2\n"},
		{name: "userData and networkData", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("camel"), NetworkDataSecretRef: ref("camel")},
			wantUser: "#!/bin/sh\necho camel\n", wantNetwork: "version: 1\n"},
		{name: "userdata wins over userData", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("both")}, wantUser: "lower"},
		{name: "a Secret for the network data, inline user data", src: v1.CloudInitNoCloudSource{UserData: "inline", NetworkDataSecretRef: ref("seed")},
			wantUser: "inline", wantNetwork: "version: 2\n"},
		{name: "a Secret without the key", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("empty")},
			wantErr: "user data: secret empty has none of the keys userdata, userData"},
		{name: "a Secret without the network key", src: v1.CloudInitNoCloudSource{UserData: "x", NetworkDataSecretRef: ref("both")},
			wantErr: "network data: secret both has none of the keys networkdata, networkData"},
		{name: "a Secret not mounted", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("missing")},
			wantErr: "secret missing is not mounted"},
		{name: "a name that leaves the directory", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("../seed")},
			wantErr: `secret name "../seed"`},
		{name: "a name that is the directory", src: v1.CloudInitNoCloudSource{UserDataSecretRef: ref("..")},
			wantErr: `secret name ".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := ForVolume(vmi, &tt.src, secrets)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantUser, string(nc.UserData))
			if tt.wantNetwork == "" {
				assert.Nil(t, nc.NetworkConfig)
			} else {
				assert.Equal(t, tt.wantNetwork, string(nc.NetworkConfig))
			}
		})
	}
}
