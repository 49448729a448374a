package launcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestStartFailuresSayWhatToFix: a start that fails for something in the user's hands ends
// with a reason for it and a message that names the image and the file it lacks.
func TestStartFailuresSayWhatToFix(t *testing.T) {
	const image = "registry.example/empty:1"
	tests := []struct {
		name        string
		files       map[string]string // under the launcher's root, relative
		mutate      func(vmi *v1.VirtualMachineInstance)
		failOn      string
		wantReason  string
		wantMessage []string
	}{
		{
			name:        "containerDisk image without /disk",
			files:       map[string]string{"cd/root/etc/hostname": "x"},
			mutate:      containerDisk(image, ""),
			wantReason:  ReasonContainerDiskNotFound,
			wantMessage: []string{`"root"`, `"` + image + `"`, "no file under /disk/"},
		},
		{
			name:        "containerDisk image with an empty /disk",
			files:       map[string]string{"cd/root/disk/.keep/x": ""},
			mutate:      containerDisk(image, ""),
			wantReason:  ReasonContainerDiskNotFound,
			wantMessage: []string{image, "holds no disk"},
		},
		{
			name:        "containerDisk path that the image lacks",
			files:       map[string]string{"cd/root/disk/d.img": "x"},
			mutate:      containerDisk(image, "/images/root.qcow2"),
			wantReason:  ReasonContainerDiskNotFound,
			wantMessage: []string{image, `no disk at path "/images/root.qcow2"`},
		},
		{
			name:        "containerDisk with two disks",
			files:       map[string]string{"cd/root/disk/a.img": "x", "cd/root/disk/b.img": "y"},
			mutate:      containerDisk(image, ""),
			wantReason:  ReasonContainerDiskAmbiguous,
			wantMessage: []string{image, "more than one file"},
		},
		{
			name:  "kernelBoot kernel path wrong",
			files: map[string]string{"kb/boot/vmlinuz": "k"},
			mutate: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{Container: &v1.KernelBootContainer{
					Image: "kernels:1", KernelPath: "/boot/vmlinux"}}}
			},
			wantReason:  ReasonKernelBootFileNotFound,
			wantMessage: []string{`"kernels:1"`, `kernelPath "/boot/vmlinux"`},
		},
		{
			name:        "libvirt refuses the domain",
			failOn:      "Define",
			wantReason:  ReasonDomainDefineFailed,
			wantMessage: []string{"define domain ns_guest"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hv := newFake()
			hv.failOn = tt.failOn
			l := newTestLauncher(t, hv)
			root := t.TempDir()
			l.cfg.ContainerDiskRoot = filepath.Join(root, "cd")
			l.cfg.KernelBootRoot = filepath.Join(root, "kb")
			for name, content := range tt.files {
				p := filepath.Join(root, name)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			vmi := testVMI()
			if tt.mutate != nil {
				tt.mutate(vmi)
			}
			s, err := l.Sync(context.Background(), api.SyncRequest{VMI: vmi})
			require.Error(t, err)
			assert.Equal(t, api.PhaseFailed, s.Phase)
			assert.Equal(t, tt.wantReason, s.Reason)
			for _, m := range tt.wantMessage {
				assert.Contains(t, s.Message, m)
			}
			assert.NotContains(t, s.Message, root, "the launcher's own paths mean nothing to the user")
		})
	}
}

func containerDisk(image, path string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{}}}}
		vmi.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{
			ContainerDisk: &v1.ContainerDiskSource{Image: image, Path: path}}}}
	}
}
