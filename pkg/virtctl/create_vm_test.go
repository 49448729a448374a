package virtctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// runCreate runs `virtctl create ARGS...` with nothing but its command line: the kubeconfig
// does not exist and there are no clients, so a command that reached for the cluster fails.
func runCreate(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cliContext{flags: genericclioptions.NewConfigFlags(true), streams: Streams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}}
	cmd := newCommand(c)
	cmd.SetArgs(append([]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing"), "create"}, args...))
	cmd.SetOut(&errOut) // cobra's own output (help, usage) is not the manifest
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// decodeStrict decodes a manifest as kubectl would send it, refusing fields the type lacks.
func decodeStrict[T any](t *testing.T, manifest string) *T {
	t.Helper()
	obj := new(T)
	require.NoError(t, yaml.UnmarshalStrict([]byte(manifest), obj), manifest)
	return obj
}

// normalized is obj after the round trip through YAML its manifest makes, so that quantities
// compare equal whatever their cached string form.
func normalized[T any](t *testing.T, obj *T) *T {
	t.Helper()
	out, err := yaml.Marshal(obj)
	require.NoError(t, err)
	return decodeStrict[T](t, string(out))
}

// createdVM is the VM `create vm --name NAME` makes with no other flag; edit changes it.
func createdVM(name string, edit func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec)) *v1.VirtualMachine {
	vm := &v1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				TerminationGracePeriodSeconds: ptr.To(int64(180)),
				Domain:                        v1.DomainSpec{Memory: &v1.Memory{Guest: ptr.To(apiresource.MustParse("512Mi"))}},
			}},
		},
	}
	if edit != nil {
		edit(vm, &vm.Spec.Template.Spec)
	}
	return vm
}

func containerDisk(name, image string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: image}}}
}

func pvc(name, claim string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

// inferring makes vm infer its instance type from volume it and its preference from volume
// pref ("": no matcher), under the Ignore policy when implicit.
func inferring(vm *v1.VirtualMachine, it, pref string, implicit bool) {
	var policy *v1.InferFromVolumeFailurePolicy
	if implicit {
		policy = ptr.To(v1.IgnoreInferFromVolumeFailure)
	}
	if it != "" {
		vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: it, InferFromVolumeFailurePolicy: policy}
	}
	if pref != "" {
		vm.Spec.Preference = &v1.PreferenceMatcher{InferFromVolume: pref, InferFromVolumeFailurePolicy: policy}
	}
}

func noCloud(src v1.CloudInitNoCloudSource) v1.Volume {
	return v1.Volume{Name: "cloudinitdisk", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &src}}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestCreateVM runs the `virtctl create vm` command lines of KubeVirt's docs, examples and
// tests and checks the whole VirtualMachine each prints.
func TestCreateVM(t *testing.T) {
	dir := t.TempDir()
	passwordFile := filepath.Join(dir, "password")
	require.NoError(t, os.WriteFile(passwordFile, []byte("password\n"), 0o600))
	trickyPasswordFile := filepath.Join(dir, "tricky")
	require.NoError(t, os.WriteFile(trickyPasswordFile, []byte("#not: a comment\n"), 0o600))
	emptyFile := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(emptyFile, nil, 0o600))
	userData := "#cloud-config\nuser: user\npassword: password\nchpasswd: { expire: False }"
	networkData := "network:\n  version: 1\n  config:\n  - type: physical\n    name: eth0\n    subnets:\n      - type: dhcp"
	rsaKey := "ssh-rsa " + strings.Repeat("A", 540) + " me@laptop" // longer than a YAML line

	tests := []struct {
		name       string
		args       []string
		want       *v1.VirtualMachine
		wantStderr string
	}{
		{name: "the instance types guide: instance type, preference, container disk",
			args: []string{"vm", "--name", "my-vm", "--instancetype", "u1.medium", "--preference", "fedora",
				"--volume-containerdisk=src:quay.io/containerdisks/fedora:latest"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				vm.Spec.Instancetype = &v1.InstancetypeMatcher{Name: "u1.medium"}
				vm.Spec.Preference = &v1.PreferenceMatcher{Name: "fedora"}
				spec.Domain.Memory = nil // the instance type's
				spec.Volumes = []v1.Volume{containerDisk("my-vm-containerdisk-0", "quay.io/containerdisks/fedora:latest")}
			})},
		{name: "a name and a run strategy", args: []string{"vm", "--name=my-vm", "--run-strategy=Always"},
			want: createdVM("my-vm", nil)},
		{name: "run strategies in any case", args: []string{"vm", "--name=my-vm", "--run-strategy=rerunonfailure"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, _ *v1.VirtualMachineInstanceSpec) {
				vm.Spec.RunStrategy = ptr.To(v1.RunStrategyRerunOnFailure)
			})},
		{name: "a grace period", args: []string{"vm", "--name=my-vm", "--termination-grace-period", "0"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
			})},
		{name: "memory and an ephemeral container disk",
			args: []string{"vm", "--name=my-vm", "--memory=1Gi", "--volume-containerdisk=src:my.registry/my-image:my-tag"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Domain.Memory.Guest = ptr.To(apiresource.MustParse("1Gi"))
				spec.Volumes = []v1.Volume{containerDisk("my-vm-containerdisk-0", "my.registry/my-image:my-tag")}
			})},
		{name: "a namespaced instance type and preference, kinds in any case",
			args: []string{"vm", "--name=my-vm", "--instancetype=virtualmachineinstancetype/my-instancetype",
				"--preference=VirtualMachinePreference/my-preference"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				vm.Spec.Instancetype = &v1.InstancetypeMatcher{Kind: "virtualmachineinstancetype", Name: "my-instancetype"}
				vm.Spec.Preference = &v1.PreferenceMatcher{Kind: "virtualmachinepreference", Name: "my-preference"}
				spec.Domain.Memory = nil
			})},
		{name: "the cluster-wide kinds named",
			args: []string{"vm", "--name=my-vm", "--instancetype=virtualmachineclusterinstancetype/my-clusterinstancetype",
				"--preference=virtualmachineclusterpreference/my-clusterpreference"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				vm.Spec.Instancetype = &v1.InstancetypeMatcher{Kind: "virtualmachineclusterinstancetype", Name: "my-clusterinstancetype"}
				vm.Spec.Preference = &v1.PreferenceMatcher{Kind: "virtualmachineclusterpreference", Name: "my-clusterpreference"}
				spec.Domain.Memory = nil
			})},
		{name: "a preference keeps the default memory", args: []string{"vm", "--name=my-vm", "--preference=my-preference"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, _ *v1.VirtualMachineInstanceSpec) {
				vm.Spec.Preference = &v1.PreferenceMatcher{Name: "my-preference"}
			})},
		{name: "a PVC used directly: inferred from, if it can be", args: []string{"vm", "--name=my-vm", "--volume-pvc=src:my-pvc"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("my-pvc", "my-pvc")}
				inferring(vm, "my-pvc", "my-pvc", true)
			})},
		{name: "a PVC volume of another name", args: []string{"vm", "--name=my-vm", "--volume-pvc=src:my-pvc,name:rootdisk"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("rootdisk", "my-pvc")}
				inferring(vm, "rootdisk", "rootdisk", true)
			})},
		{name: "multiple volumes and a boot order: the PVC boots, and is inferred from",
			args: []string{"vm", "--name=my-vm", "--volume-containerdisk=src:my.registry/my-image:my-tag", "--volume-pvc=src:my-pvc,bootorder:1"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{containerDisk("my-vm-containerdisk-0", "my.registry/my-image:my-tag"), pvc("my-pvc", "my-pvc")}
				spec.Domain.Devices.Disks = []v1.Disk{{Name: "my-pvc", BootOrder: ptr.To(uint(1))}}
				inferring(vm, "my-pvc", "my-pvc", true)
			})},
		{name: "the first volume a container disk: nothing inferred",
			args: []string{"vm", "--name=my-vm", "--volume-containerdisk=src:img", "--volume-pvc=src:my-pvc"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{containerDisk("my-vm-containerdisk-0", "img"), pvc("my-pvc", "my-pvc")}
			})},
		{name: "inference asked for, from the boot volume",
			args: []string{"vm", "--name=my-vm", "--volume-pvc=src:my-pvc", "--infer-instancetype", "--infer-preference"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("my-pvc", "my-pvc")}
				inferring(vm, "my-pvc", "my-pvc", false)
				spec.Domain.Memory = nil
			})},
		{name: "each from a volume of its own, KubeVirt's example",
			args: []string{"vm", "--name=my-vm", "--volume-pvc=src:pvc-a", "--volume-pvc=src:pvc-b",
				"--infer-instancetype-from=pvc-a", "--infer-preference-from=pvc-b"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("pvc-a", "pvc-a"), pvc("pvc-b", "pvc-b")}
				inferring(vm, "pvc-a", "pvc-b", false)
				spec.Domain.Memory = nil
			})},
		{name: "an instance type named, the preference inferred",
			args: []string{"vm", "--name=my-vm", "--instancetype=u1.small", "--volume-pvc=src:my-pvc"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("my-pvc", "my-pvc")}
				inferring(vm, "", "my-pvc", true)
				vm.Spec.Instancetype = &v1.InstancetypeMatcher{Name: "u1.small"}
				spec.Domain.Memory = nil
			})},
		{name: "--memory: no instance type inferred, the preference is",
			args: []string{"vm", "--name=my-vm", "--memory=1Gi", "--volume-pvc=src:my-pvc"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("my-pvc", "my-pvc")}
				spec.Domain.Memory.Guest = ptr.To(apiresource.MustParse("1Gi"))
				inferring(vm, "", "my-pvc", true)
			})},
		{name: "inference turned off", args: []string{"vm", "--name=my-vm", "--volume-pvc=src:my-pvc", "--infer-instancetype=false", "--infer-preference=false"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{pvc("my-pvc", "my-pvc")}
			})},
		{name: "volumes by kind then command line; disks in the flags' order",
			args: []string{"vm", "--name=my-vm", "--volume-pvc=src:data,name:datadisk,bootorder:2",
				"--volume-containerdisk=src:img1,name:rootdisk,bootorder:1", "--volume-containerdisk=src:registry:5000/img2:v1"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{containerDisk("rootdisk", "img1"), containerDisk("my-vm-containerdisk-1", "registry:5000/img2:v1"),
					pvc("datadisk", "data")}
				spec.Domain.Devices.Disks = []v1.Disk{{Name: "rootdisk", BootOrder: ptr.To(uint(1))}, {Name: "datadisk", BootOrder: ptr.To(uint(2))}}
			})},
		{name: "the namespace of -n", args: []string{"-n", "my-namespace", "vm", "--name=my-vm"},
			want: createdVM("my-vm", func(vm *v1.VirtualMachine, _ *v1.VirtualMachineInstanceSpec) {
				vm.Namespace = "my-namespace"
			})},
		{name: "cloud-init user and network data",
			args: []string{"vm", "--name=my-vm", "--cloud-init-user-data", b64(userData), "--cloud-init-network-data", b64(networkData)},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{UserDataBase64: b64(userData), NetworkDataBase64: b64(networkData)})}
			})},
		{name: "network data alone, with an empty cloud-config",
			args: []string{"vm", "--name=my-vm", "--cloud-init-network-data=" + b64(networkData)},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{UserData: "#cloud-config", NetworkDataBase64: b64(networkData)})}
			})},
		{name: "a user and an SSH key, after the container disk",
			args: []string{"vm", "--name=my-vm", "--user", "cloud-user", "--ssh-key=ssh-ed25519 AAAA....", "--volume-containerdisk=src:img"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{containerDisk("my-vm-containerdisk-0", "img"),
					noCloud(v1.CloudInitNoCloudSource{UserData: "#cloud-config\nuser: cloud-user\nssh_authorized_keys:\n  - ssh-ed25519 AAAA...."})}
			})},
		{name: "SSH keys repeated and comma-separated; a long key stays on its line",
			args: []string{"vm", "--name=my-vm", "--ssh-key=ssh-ed25519 AAAA1,ssh-ed25519 AAAA2", "--ssh-key", rsaKey},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{
					UserData: "#cloud-config\nssh_authorized_keys:\n  - ssh-ed25519 AAAA1\n  - ssh-ed25519 AAAA2\n  - " + rsaKey})}
			})},
		{name: "a password from a file, and the guest agent managing SSH",
			args: []string{"vm", "--name=my-vm", "--user=cloud-user", "--password-file=" + passwordFile, "--ga-manage-ssh"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{UserData: "#cloud-config\nuser: cloud-user\n" +
					"password: password\nchpasswd: { expire: False }\nruncmd:\n  - [ setsebool, -P, 'virt_qemu_ga_manage_ssh', 'on' ]"})}
			}),
			wantStderr: "Warning: --password-file: the password is stored in clear text"},
		{name: "values YAML would misread are quoted",
			args: []string{"vm", "--name=my-vm", "--user=123", "--password-file=" + trickyPasswordFile},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{
					UserData: "#cloud-config\nuser: \"123\"\npassword: \"#not: a comment\"\nchpasswd: { expire: False }"})}
			}),
			wantStderr: "clear text"},
		{name: "--cloud-init=nocloud alone asks for the volume", args: []string{"vm", "--name=my-vm", "--cloud-init=NoCloud"},
			want: createdVM("my-vm", func(_ *v1.VirtualMachine, spec *v1.VirtualMachineInstanceSpec) {
				spec.Volumes = []v1.Volume{noCloud(v1.CloudInitNoCloudSource{UserData: "#cloud-config"})}
			})},
		{name: "--cloud-init=none makes none", args: []string{"vm", "--name=my-vm", "--cloud-init=none", "--user=cloud-user"},
			want:       createdVM("my-vm", nil),
			wantStderr: "Warning: --cloud-init=none: no cloud-init volume; ignoring --user"},
		{name: "an empty password file adds nothing", args: []string{"vm", "--name=my-vm", "--password-file=" + emptyFile},
			want: createdVM("my-vm", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runCreate(t, tt.args...)
			require.NoError(t, err, stderr)
			assert.Equal(t, normalized(t, tt.want), decodeStrict[v1.VirtualMachine](t, out), out)
			if tt.wantStderr != "" {
				assert.Contains(t, stderr, tt.wantStderr)
			} else {
				assert.Empty(t, stderr)
			}
		})
	}
}

// TestCreateVMRefusals: a bad value fails the command with an error naming its flag, and
// prints no manifest. So do KubeVirt's flags Hangar's API cannot express yet.
func TestCreateVMRefusals(t *testing.T) {
	long := strings.Repeat("a", 40)
	twoLines := filepath.Join(t.TempDir(), "password")
	require.NoError(t, os.WriteFile(twoLines, []byte("one\ntwo\n"), 0o600))
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"an unknown run strategy", []string{"--run-strategy=Sometimes"}, `invalid --run-strategy "Sometimes": want one of Always, Manual, Halted, Once, RerunOnFailure`},
		{"a name that is no DNS label", []string{"--name=My_VM"}, `invalid --name "My_VM": a lowercase RFC 1123 label`},
		{"a negative grace period", []string{"--termination-grace-period=-1"}, `invalid --termination-grace-period "-1": must not be negative`},
		{"memory that is no quantity", []string{"--memory=lots"}, `invalid --memory "lots"`},
		{"no memory", []string{"--memory=0"}, `invalid --memory "0"`},
		{"memory with an instance type", []string{"--memory=1Gi", "--instancetype=u1.small"}, "[instancetype memory] were all set"},
		{"an instance type's unknown kind", []string{"--instancetype=pod/x"}, `invalid --instancetype "pod/x": unknown kind "pod", want virtualmachineinstancetype or virtualmachineclusterinstancetype`},
		{"a preference's unknown kind", []string{"--preference=virtualmachineinstancetype/x"}, `invalid --preference "virtualmachineinstancetype/x": unknown kind`},
		{"too many slashes", []string{"--instancetype=a/b/c"}, `invalid --instancetype "a/b/c": 2 slashes`},
		{"no preference name", []string{"--preference=virtualmachinepreference/"}, `invalid --preference "virtualmachinepreference/": the name is empty`},
		{"an empty instance type", []string{"--instancetype="}, `invalid --instancetype "": the name is empty`},
		{"a container disk without src", []string{"--volume-containerdisk=name:disk1"}, `invalid --volume-containerdisk "name:disk1": src must be given`},
		{"no params", []string{"--volume-containerdisk="}, `invalid --volume-containerdisk "": no params: want src:...,name:...,bootorder:...`},
		{"a param without a colon", []string{"--volume-containerdisk=my.registry/img"}, `"my.registry/img" is not key:value`},
		{"an unknown param", []string{"--volume-containerdisk=src:img,size:1Gi"}, `unknown param "size", supported: src, name, bootorder`},
		{"a param twice", []string{"--volume-pvc=src:a,src:b"}, `param "src" given twice`},
		{"boot order 0", []string{"--volume-containerdisk=src:img,bootorder:0"}, "bootorder must be greater than 0"},
		{"a boot order QEMU cannot take", []string{"--volume-containerdisk=src:img,bootorder:2147483648"}, "bootorder must be at most 2147483647"},
		{"a boot order that is no number", []string{"--volume-pvc=src:a,bootorder:first"}, `bootorder "first" is not a number`},
		{"a DataSource without src", []string{"--volume-datasource=size:1Gi"}, `invalid --volume-datasource "size:1Gi": src must be given`},
		{"a clone without the claim's namespace", []string{"--volume-clone-pvc=src:base"}, "src: want NAMESPACE/NAME"},
		{"a blank disk without a size", []string{"--volume-blank=name:scratch"}, "size: want a positive quantity"},
		{"an import of an unknown type", []string{"--volume-import=type:ftp,url:x"}, `unknown type "ftp"`},
		{"an http import without a url", []string{"--volume-import=type:http,size:1Gi"}, "url must be given"},
		{"a url for a DataSource import", []string{"--volume-import=type:ds,url:x"}, "type ds takes no url"},
		{"two DataVolumes of one name", []string{"--volume-blank=size:1Gi,name:d", "--volume-import=type:blank,size:1Gi,name:d"}, "there is a volume named d already"},
		{"a boot order twice", []string{"--volume-containerdisk=src:img,name:root,bootorder:1", "--volume-pvc=src:data,bootorder:1"},
			`invalid --volume-pvc "src:data,bootorder:1": bootorder 1 is volume root's already`},
		{"a volume name twice", []string{"--volume-containerdisk=src:img,name:disk", "--volume-pvc=src:disk"},
			`invalid --volume-pvc "src:disk": there is a volume named disk already`},
		{"a volume name that is no DNS label", []string{"--volume-containerdisk=src:img,name:Root_Disk"}, `the volume name Root_Disk: a lowercase RFC 1123 label`},
		{"a claim's name that is no volume name", []string{"--volume-pvc=src:my.pvc"}, `the volume name my.pvc: must not contain dots`},
		{"a claim of another namespace", []string{"--volume-pvc=src:other/my-pvc"}, `invalid --volume-pvc "src:other/my-pvc": src: a VM's claims are in its own namespace`},
		{"a container disk name too long for its init container", []string{"--name=" + long, "--volume-containerdisk=src:img"},
			"the volume name " + long + "-containerdisk-0 is longer than 48 characters"},
		{"a launcher pod volume's name", []string{"--volume-pvc=src:hangar-sockets"}, "is one of the launcher pod's own volumes"},
		{"a launcher device's name", []string{"--volume-pvc=src:kvm"}, "is a device the launcher container needs"},
		{"the cloud-init volume's name taken", []string{"--volume-pvc=src:cloudinitdisk", "--user=me"}, "the cloud-init volume is named cloudinitdisk, and so is a --volume-containerdisk or --volume-pvc volume"},
		{"user data that is no base64", []string{"--cloud-init-user-data=#cloud-config"}, `invalid --cloud-init-user-data "#cloud-config": not base64`},
		{"network data that is no base64", []string{"--cloud-init-network-data=a b"}, `invalid --cloud-init-network-data "a b": not base64`},
		{"user data and a generated cloud-config", []string{"--cloud-init-user-data=" + b64("#cloud-config"), "--user=me"}, "[cloud-init-user-data user] were all set"},
		{"a config drive", []string{"--cloud-init=configdrive"}, `invalid --cloud-init "configdrive": Hangar has no configDrive volumes; use nocloud`},
		{"an unknown data source", []string{"--cloud-init=ec2"}, `invalid --cloud-init "ec2": want nocloud or none`},
		{"a missing password file", []string{"--password-file=/nonexistent/password"}, `invalid --password-file "/nonexistent/password"`},
		{"a user of two lines", []string{"--user=me\nroot"}, `invalid --user "me\nroot": must be one line`},
		{"a password of two lines", []string{"--password-file=" + twoLines}, `invalid --password-file "` + twoLines + `": the password must be one line`},
		{"an argument", []string{"my-vm"}, `unknown command "my-vm" for "virtctl create vm"`},
		{"inference asked for without a volume", []string{"--infer-instancetype"}, `invalid --infer-instancetype "true": at least one volume is needed`},
		{"inference asked for from a container disk", []string{"--volume-containerdisk=src:img,name:disk", "--infer-preference"},
			`invalid --infer-preference "true": volume disk is no PVC`},
		{"inference from a volume the VM lacks", []string{"--volume-pvc=src:my-pvc", "--infer-instancetype-from=root"},
			`invalid --infer-instancetype-from "root": there is no volume named root`},
		{"an instance type inferred and named", []string{"--volume-pvc=src:my-pvc", "--infer-instancetype", "--instancetype=u1.small"},
			"[infer-instancetype instancetype] were all set"},
		{"an instance type inferred, and memory", []string{"--volume-pvc=src:my-pvc", "--infer-instancetype-from=my-pvc", "--memory=1Gi"},
			"[infer-instancetype-from memory] were all set"},
		{"a preference inferred two ways", []string{"--volume-pvc=src:my-pvc", "--infer-preference", "--infer-preference-from=my-pvc"},
			"[infer-preference infer-preference-from] were all set"},
		{"inference asked for from a blank DataVolume", []string{"--volume-blank=size:1Gi,name:scratch", "--infer-preference"},
			`invalid --infer-preference "true": volume scratch is a DataVolume made from nothing to infer from`},
		{"inference asked for from an HTTP import", []string{"--volume-import=type:http,url:https://example.org/d.img,size:1Gi,name:web",
			"--infer-instancetype-from=web"}, `invalid --infer-instancetype-from "web": volume web is a DataVolume made from nothing`},
		// Not in Hangar's API yet: sysprep, access credentials.
		{"--volume-sysprep", []string{"--volume-sysprep=src:my-cm"}, "unknown flag: --volume-sysprep"},
		{"--access-cred", []string{"--access-cred=type:ssh,src:my-keys,user:me"}, "unknown flag: --access-cred"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCreate(t, append([]string{"vm"}, tt.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Empty(t, out, "no manifest")
		})
	}
}

// TestCreateVMInfersFromDataVolumes: as KubeVirt's virtctl, the boot volume is inferred from
// when it is a DataVolume made from a DataSource, a claim, a VolumeSnapshot or a registry image;
// not from other imports or a blank disk, silently unless asked for.
func TestCreateVMInfersFromDataVolumes(t *testing.T) {
	const registryImage = "--volume-import=type:registry,url:docker://quay.io/containerdisks/fedora:41,size:10Gi,name:root"
	for _, tt := range []struct {
		name string
		args []string
		// volume is the one inferred from, "" for none; explicit says inference was asked for.
		volume   string
		explicit bool
	}{
		{name: "a DataSource", args: []string{"--volume-datasource=src:os-images/fedora"}, volume: "my-vm-ds-fedora"},
		{name: "a DataSource, asked for", args: []string{"--volume-datasource=src:fedora", "--infer-instancetype", "--infer-preference"},
			volume: "my-vm-ds-fedora", explicit: true},
		{name: "a cloned claim", args: []string{"--volume-clone-pvc=src:team-a/base"}, volume: "my-vm-pvc-base"},
		{name: "an import of a DataSource", args: []string{"--volume-import=type:ds,src:fedora,name:root"}, volume: "root"},
		{name: "an import of a claim", args: []string{"--volume-import=type:pvc,src:team-a/base,name:root"}, volume: "root"},
		{name: "an import of a VolumeSnapshot", args: []string{"--volume-import=type:snapshot,src:team-a/snap,name:root"}, volume: "root"},
		{name: "an import of a registry image (virt-api reads nothing of it)", args: []string{registryImage}, volume: "root"},
		{name: "an HTTP import: nothing inferred", args: []string{"--volume-import=type:http,url:https://example.org/d.img,size:1Gi"}},
		{name: "a blank disk: nothing inferred", args: []string{"--volume-blank=size:1Gi"}},
		{name: "a blank disk first, the DataSource booting", args: []string{"--volume-datasource=src:fedora,bootorder:1", "--volume-blank=size:1Gi"},
			volume: "my-vm-ds-fedora"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runCreate(t, append([]string{"vm", "--name=my-vm"}, tt.args...)...)
			require.NoError(t, err, stderr)
			vm := decodeStrict[v1.VirtualMachine](t, out)
			want := createdVM("my-vm", nil)
			if tt.volume != "" {
				inferring(want, tt.volume, tt.volume, !tt.explicit)
			}
			assert.Equal(t, want.Spec.Instancetype, vm.Spec.Instancetype)
			assert.Equal(t, want.Spec.Preference, vm.Spec.Preference)
			if tt.explicit {
				assert.Nil(t, vm.Spec.Template.Spec.Domain.Memory, "the instance type's")
			} else {
				assert.Equal(t, "512Mi", vm.Spec.Template.Spec.Domain.Memory.Guest.String(), "kept for when the volume names none")
			}
		})
	}
}

// TestCreateGeneratedNames: without --name, KubeVirt's prefixes and five random characters.
func TestCreateGeneratedNames(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"vm"}, `^vm-[a-z0-9]{5}$`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi"}, `^clusterinstancetype-[a-z0-9]{5}$`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--namespaced"}, `^instancetype-[a-z0-9]{5}$`},
		{[]string{"preference"}, `^clusterpreference-[a-z0-9]{5}$`},
		{[]string{"-n", "team-a", "preference"}, `^preference-[a-z0-9]{5}$`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := runCreate(t, tt.args...)
			require.NoError(t, err)
			var obj struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(out), &obj))
			assert.Regexp(t, regexp.MustCompile(tt.want), obj.Metadata.Name)
			other, _, err := runCreate(t, tt.args...)
			require.NoError(t, err)
			assert.NotEqual(t, out, other, "another name each time")
		})
	}
}
