//go:build kube

package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// guestHardwareDir holds manifests with the field sets of KubeVirt's examples and user guide
// for real-world guests (a Windows VMI with Hyper-V, SATA and e1000; a Secure Boot VMI; a
// Windows 11 VM with Secure Boot, persistent EFI variables and TPM, a tablet and an install
// CD-ROM), which Hangar rejected before it knew these fields. The e2e suite applies the same
// files to the local cluster.
const guestHardwareDir = "../testdata/guest-hardware"

// TestGuestHardwareManifestsApply: kubectl apply --dry-run=server through kube-apiserver
// accepts them all, and a Secure Boot guest without SMM is refused with the field's path.
func TestGuestHardwareManifestsApply(t *testing.T) {
	c := framework.StartAggregated(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(guestHardwareDir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			out, err := c.Kubectl("apply", "--dry-run=server", "-n", "default", "-f", file)
			require.NoError(t, err, out)
			assert.Contains(t, out, "created (server dry run)")
		})
	}

	t.Run("secure boot without SMM is refused", func(t *testing.T) {
		file := filepath.Join(dir, "nosmm.yaml")
		require.NoError(t, os.WriteFile(file, []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: nosmm
spec:
  domain:
    firmware:
      bootloader:
        efi: {}
    resources:
      requests: {memory: 1Gi}
`), 0o644))
		out, err := c.Kubectl("apply", "--dry-run=server", "-n", "default", "-f", file)
		require.Error(t, err)
		assert.Contains(t, out, "spec.domain.features.smm")
	})
}
