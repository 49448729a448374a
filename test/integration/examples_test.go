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

// guestHardwareManifests are manifests with the field sets of KubeVirt's examples and user
// guide for real-world guests (a Windows VMI with Hyper-V, SATA and e1000; a Secure Boot
// VMI; a Windows 11 VM with Secure Boot, persistent EFI variables and TPM, a tablet and an
// install CD-ROM), which Hangar rejected before it knew these fields.
var guestHardwareManifests = map[string]string{
	"windows": `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: windows
spec:
  domain:
    clock:
      utc: {}
      timer:
        hpet: {present: false}
        hyperv: {}
        pit: {tickPolicy: delay}
        rtc: {tickPolicy: catchup}
    cpu: {cores: 2}
    devices:
      disks:
      - name: system
        disk: {bus: sata}
      interfaces:
      - name: default
        masquerade: {}
        model: e1000
    features:
      acpi: {}
      apic: {}
      hyperv:
        relaxed: {}
        vapic: {}
        spinlocks: {spinlocks: 8191}
    firmware:
      uuid: 0b7c5a8e-93a1-4d5e-8f70-2c6d1e4b9a31
    resources:
      requests: {memory: 2Gi}
  networks:
  - name: default
    pod: {}
  terminationGracePeriodSeconds: 0
  volumes:
  - name: system
    persistentVolumeClaim: {claimName: windows-system}
`,
	"secureboot": `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: secureboot
spec:
  domain:
    devices:
      disks:
      - name: root
        disk: {bus: virtio}
    features:
      acpi: {}
      smm: {enabled: true}
    firmware:
      bootloader:
        efi: {secureBoot: true}
    resources:
      requests: {memory: 1Gi}
  volumes:
  - name: root
    containerDisk: {image: registry.example/uefi-demo:latest}
`,
	"windows11": `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: windows11
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        clock:
          utc: {}
          timer:
            hpet: {present: false}
            hyperv: {}
            pit: {tickPolicy: delay}
            rtc: {tickPolicy: catchup}
        cpu:
          cores: 4
          model: host-model
          features:
          - {name: vmx, policy: optional}
        devices:
          autoattachInputDevice: true
          blockMultiQueue: true
          networkInterfaceMultiqueue: true
          inputs:
          - {name: tablet, type: tablet, bus: usb}
          tpm: {persistent: true}
          disks:
          - name: system
            bootOrder: 2
            disk: {bus: sata}
          - name: installer
            bootOrder: 1
            cdrom: {bus: sata}
          interfaces:
          - name: default
            masquerade: {}
            model: e1000e
        features:
          acpi: {}
          apic: {}
          smm: {}
          hyperv:
            relaxed: {}
            vapic: {}
            vpindex: {}
            runtime: {}
            synic: {}
            synictimer: {direct: {}}
            reset: {}
            frequencies: {}
            tlbflush: {}
            ipi: {}
            reenlightenment: {}
            spinlocks: {spinlocks: 8191}
        firmware:
          bootloader:
            efi: {secureBoot: true, persistent: true}
        resources:
          requests: {memory: 4Gi}
      networks:
      - name: default
        pod: {}
      volumes:
      - name: system
        persistentVolumeClaim: {claimName: windows11-system}
      - name: installer
        persistentVolumeClaim: {claimName: windows11-iso}
`,
}

// TestGuestHardwareManifestsApply: kubectl apply --dry-run=server through kube-apiserver
// accepts them all, and a Secure Boot guest without SMM is refused with the field's path.
func TestGuestHardwareManifestsApply(t *testing.T) {
	c := framework.StartAggregated(t)
	dir := t.TempDir()
	for name, manifest := range guestHardwareManifests {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".yaml")
			require.NoError(t, os.WriteFile(file, []byte(manifest), 0o644))
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
