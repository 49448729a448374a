package domain

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

var betweenTags = regexp.MustCompile(`>\s+<`)

// domainXML is the converted domain as one line, so fragments can be matched whatever the
// indentation.
func domainXML(t *testing.T, vmi *v1.VirtualMachineInstance, opts Options) string {
	t.Helper()
	d, err := Convert(vmi, opts)
	require.NoError(t, err)
	s, err := d.Marshal()
	require.NoError(t, err)
	return betweenTags.ReplaceAllString(s, "><")
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name    string
		vmi     *v1.VirtualMachineInstance
		opts    func(*Options)
		want    []string
		notWant []string
	}{
		{
			name: "defaults under emulation",
			vmi:  testVMI(),
			want: []string{
				`<domain type="qemu"><name>ns_guest</name><uuid>6a1d3c9e-0000-4000-8000-000000000001</uuid>`,
				`<memory unit="KiB">131072</memory><vcpu placement="static">1</vcpu>`,
				`<type arch="x86_64" machine="q35">hvm</type>`,
				`<features><acpi></acpi></features>`,
				`<cpu><topology sockets="1" cores="1" threads="1"></topology></cpu>`,
				`<on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>`,
				`<emulator>/usr/bin/qemu-system-x86_64</emulator>`,
				`<serial type="unix"><source mode="bind" path="/run/hangar/serial.sock"></source><target port="0"></target></serial>`,
				`<console type="unix"><source mode="bind" path="/run/hangar/serial.sock"></source><target type="serial" port="0"></target></console>`,
				`<graphics type="vnc"><listen type="socket" socket="/run/hangar/vnc.sock"></listen></graphics>`,
				`<video><model type="vga" heads="1" vram="16384"></model></video>`,
				`<interface type="ethernet"><mac address="52:54:00:c7:12:ec"></mac><target dev="tap0" managed="no"></target><model type="virtio"></model></interface>`,
				`<memballoon model="none"></memballoon>`,
			},
			notWant: []string{`<rng`, `<kernel>`, `<sysinfo`, `mode="host-model"`},
		},
		{
			name: "KVM with host-model by default",
			vmi:  testVMI(),
			opts: func(o *Options) { o.UseEmulation = false },
			want: []string{`<domain type="kvm">`, `<cpu mode="host-model"><topology sockets="1" cores="1" threads="1"></topology></cpu>`},
		},
		{
			name: "KVM host-passthrough and topology",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.CPU = &v1.CPU{Sockets: 2, Cores: 3, Threads: 2, Model: "host-passthrough"}
			}),
			opts: func(o *Options) { o.UseEmulation = false },
			want: []string{`<vcpu placement="static">12</vcpu>`, `<cpu mode="host-passthrough"><topology sockets="2" cores="3" threads="2"></topology></cpu>`},
		},
		{
			name: "named model",
			vmi:  testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU = &v1.CPU{Model: "Skylake-Client"} }),
			want: []string{`<cpu match="exact" mode="custom"><model fallback="allow">Skylake-Client</model><topology sockets="1" cores="1" threads="1"></topology></cpu>`},
		},
		{
			name: "host-passthrough under emulation falls back to QEMU's default",
			vmi:  testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU = &v1.CPU{Model: "host-passthrough"} }),
			want: []string{`<cpu><topology sockets="1" cores="1" threads="1"></topology></cpu>`},
		},
		{
			name: "memory.guest wins, machine type, ACPI off",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Memory = &v1.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
				v.Spec.Domain.Machine = &v1.Machine{Type: "pc"}
				v.Spec.Domain.Features = &v1.Features{ACPI: v1.FeatureState{Enabled: ptr.To(false)}}
			}),
			want:    []string{`<memory unit="KiB">1048576</memory>`, `machine="pc"`},
			notWant: []string{`<acpi>`},
		},
		{
			name: "firmware UUID and serial through SMBIOS",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223", Serial: "e4686d2c"}
			}),
			want: []string{
				`<uuid>5d307ca9-b3ef-428c-8861-06e72d69f223</uuid>`,
				`<sysinfo type="smbios"><system><entry name="uuid">5d307ca9-b3ef-428c-8861-06e72d69f223</entry><entry name="serial">e4686d2c</entry></system></sysinfo>`,
				`<smbios mode="sysinfo"></smbios>`,
			},
		},
		{
			name: "kernel boot under the image root",
			vmi:  testVMI(withKernelBoot),
			want: []string{`<kernel>/images/kernel/boot/vmlinux</kernel><initrd>/images/kernel/boot/initramfs.cpio.gz</initrd><cmdline>console=ttyS0 quiet</cmdline>`},
		},
		{
			name: "kernel path cannot leave the image root",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				withKernelBoot(v)
				v.Spec.Domain.Firmware.KernelBoot.Container.KernelPath = "../../etc/shadow"
			}),
			want: []string{`<kernel>/images/kernel/etc/shadow</kernel>`},
		},
		{
			name: "every volume kind",
			vmi:  testVMI(withAllVolumes),
			want: []string{
				`<disk type="file" device="disk"><driver name="qemu" type="qcow2"></driver><source file="/run/hangar/ephemeral/container-disks/root.qcow2"></source>` +
					`<backingStore type="file"><format type="qcow2"></format><source file="/images/root/disk/debian.qcow2"></source></backingStore>` +
					`<target dev="vda" bus="virtio"></target><boot order="1"></boot></disk>`,
				`<disk type="file" device="cdrom"><driver name="qemu" type="raw"></driver><source file="/run/hangar/ephemeral/cloud-init/cidata.iso"></source><target dev="sda" bus="sata"></target><readonly></readonly></disk>`,
				`<disk type="file" device="disk"><driver name="qemu" type="raw"></driver><source file="/run/hangar/ephemeral/empty-disks/scratch.img"></source><target dev="sdb" bus="sata"></target></disk>`,
				`<source file="/var/run/kubevirt-private/vmi-disks/data/disk.img"></source><target dev="sdc" bus="scsi"></target><readonly></readonly><serial>D1</serial></disk>`,
				// Defaulting gave the unused volume a virtio disk.
				`<disk type="block" device="disk"><driver name="qemu" type="raw"></driver><source dev="/dev/blockpvc"></source><target dev="vdb" bus="virtio"></target></disk>`,
				`<controller type="scsi" index="0" model="virtio-scsi"></controller>`,
			},
		},
		{
			name: "no console, no graphics, RNG, no interface",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.AutoattachSerialConsole = ptr.To(false)
				v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
				v.Spec.Domain.Devices.AutoattachPodInterface = ptr.To(false)
				v.Spec.Domain.Devices.Rng = &v1.Rng{}
			}),
			want:    []string{`<rng model="virtio"><backend model="random">/dev/urandom</backend></rng>`},
			notWant: []string{`<serial`, `<console`, `<graphics`, `<video`, `<interface`},
		},
		{
			name: "interface MAC, model and boot order",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{
					Name: "default", Model: "e1000", MacAddress: "DE:AD:00:00:BE:AF", BootOrder: ptr.To[uint](2),
					InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}},
				}}
			}),
			want: []string{`<interface type="ethernet"><mac address="de:ad:00:00:be:af"></mac><boot order="2"></boot><target dev="tap0" managed="no"></target><model type="e1000"></model></interface>`},
		},
		{
			name: "bridge binding: the MAC the network setup chose",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default",
					InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
			}),
			opts: func(o *Options) { o.MACs = map[string]string{"default": "0a:58:0a:d9:00:05"} },
			want: []string{`<mac address="0a:58:0a:d9:00:05"></mac>`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			got := domainXML(t, tt.vmi, opts)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, got, w)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name string
		vmi  *v1.VirtualMachineInstance
		opts func(*Options)
		err  string
	}{
		{
			name: "no memory",
			vmi:  testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Resources.Requests = nil }),
			err:  "no guest memory",
		},
		{
			name: "containerDisk the launcher did not find",
			vmi:  testVMI(withAllVolumes),
			opts: func(o *Options) { o.ContainerDisks = nil },
			err:  "containerDisk root: the launcher found no image file",
		},
		{
			name: "interface without tap",
			vmi:  testVMI(),
			opts: func(o *Options) { o.Taps = nil },
			err:  "interface default: no tap device",
		},
		{
			name: "kernel boot without a kernel path",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				withKernelBoot(v)
				v.Spec.Domain.Firmware.KernelBoot.Container.KernelPath = ""
			}),
			err: "no kernelPath",
		},
		{
			name: "virtio CD-ROM",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				withAllVolumes(v)
				v.Spec.Domain.Devices.Disks[1].CDRom.Bus = v1.DiskBusVirtio
			}),
			err: "virtio bus",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			_, err := Convert(tt.vmi, opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}

func TestDeviceSuffix(t *testing.T) {
	for n, want := range map[int]string{0: "a", 25: "z", 26: "aa", 27: "ab", 701: "zz", 702: "aaa"} {
		assert.Equal(t, want, deviceSuffix(n), n)
	}
}

func TestMACAddressIsStable(t *testing.T) {
	vmi := testVMI()
	iface := vmi.Spec.Domain.Devices.Interfaces[0]
	assert.Equal(t, MACAddress(vmi, iface), MACAddress(testVMI(), iface))
	assert.True(t, strings.HasPrefix(MACAddress(vmi, iface), "52:54:00:"))
	other := iface
	other.Name = "other"
	assert.NotEqual(t, MACAddress(vmi, iface), MACAddress(vmi, other))
}

// libvirt and the DHCP server take a MAC as xx:xx:xx:xx:xx:xx; validation accepts the other
// spellings net.ParseMAC reads, as KubeVirt does, so the converter writes them canonically.
func TestMACAddressIsCanonical(t *testing.T) {
	vmi := testVMI()
	for _, spelled := range []string{"DE:AD:00:00:BE:AF", "de-ad-00-00-be-af", "dead.0000.beaf"} {
		iface := v1.Interface{Name: "default", MacAddress: spelled}
		assert.Equal(t, "de:ad:00:00:be:af", MACAddress(vmi, iface), spelled)
	}
}
