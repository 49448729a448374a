package virtctl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
)

// decodedKind decodes a created instance type or preference into the Go type of its kind.
func decodedKind(t *testing.T, manifest string) any {
	t.Helper()
	var typeMeta metav1.TypeMeta
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &typeMeta))
	assert.Equal(t, "instancetype.kubevirt.io/v1beta1", typeMeta.APIVersion)
	switch typeMeta.Kind {
	case "VirtualMachineInstancetype":
		return decodeStrict[instancetypev1beta1.VirtualMachineInstancetype](t, manifest)
	case "VirtualMachineClusterInstancetype":
		return decodeStrict[instancetypev1beta1.VirtualMachineClusterInstancetype](t, manifest)
	case "VirtualMachinePreference":
		return decodeStrict[instancetypev1beta1.VirtualMachinePreference](t, manifest)
	case "VirtualMachineClusterPreference":
		return decodeStrict[instancetypev1beta1.VirtualMachineClusterPreference](t, manifest)
	}
	t.Fatalf("unexpected kind %q", typeMeta.Kind)
	return nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "instancetype.kubevirt.io/v1beta1", Kind: kind}
}

func instancetypeSpec(cpu uint32, memory string) instancetypev1beta1.VirtualMachineInstancetypeSpec {
	return instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU:    instancetypev1beta1.CPUInstancetype{Guest: cpu},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse(memory)},
	}
}

// TestCreateInstancetypeAndPreference runs KubeVirt's documented and tested command lines of
// `virtctl create instancetype` and `virtctl create preference`.
func TestCreateInstancetypeAndPreference(t *testing.T) {
	withGPU := instancetypeSpec(2, "256Mi")
	withGPU.Gpus = []instancetypev1beta1.GPU{{Name: "gpu1", DeviceName: "nvidia"}}
	withDevices := instancetypeSpec(4, "4Gi")
	withDevices.Gpus = []instancetypev1beta1.GPU{{Name: "a", DeviceName: "nvidia.com/TU104GL"}, {Name: "b", DeviceName: "nvidia.com/GA102"}}
	withDevices.HostDevices = []instancetypev1beta1.HostDevice{{Name: "nic", DeviceName: "intel.com/qat"}}
	withDevices.IOThreadsPolicy = ptr.To(instancetypev1beta1.IOThreadsPolicyShared)
	cpuTopology := func(t instancetypev1beta1.PreferredCPUTopology) instancetypev1beta1.VirtualMachinePreferenceSpec {
		return instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &t}}
	}

	tests := []struct {
		name string
		args []string
		want any
	}{
		{name: "a cluster-wide instance type",
			args: []string{"instancetype", "--name", "my-instancetype", "--cpu", "2", "--memory", "256Mi"},
			want: &instancetypev1beta1.VirtualMachineClusterInstancetype{TypeMeta: typeMeta("VirtualMachineClusterInstancetype"),
				ObjectMeta: metav1.ObjectMeta{Name: "my-instancetype"}, Spec: instancetypeSpec(2, "256Mi")}},
		{name: "--namespaced",
			args: []string{"instancetype", "--namespaced", "--name", "my-instancetype", "--cpu", "2", "--memory", "256Mi"},
			want: &instancetypev1beta1.VirtualMachineInstancetype{TypeMeta: typeMeta("VirtualMachineInstancetype"),
				ObjectMeta: metav1.ObjectMeta{Name: "my-instancetype"}, Spec: instancetypeSpec(2, "256Mi")}},
		{name: "-n: namespaced, in that namespace",
			args: []string{"-n", "team-a", "instancetype", "--name=small", "--cpu=1", "--memory=1Gi"},
			want: &instancetypev1beta1.VirtualMachineInstancetype{TypeMeta: typeMeta("VirtualMachineInstancetype"),
				ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: "team-a"}, Spec: instancetypeSpec(1, "1Gi")}},
		{name: "a GPU",
			args: []string{"instancetype", "--name=gpu", "--cpu", "2", "--memory", "256Mi", "--gpu", "name:gpu1,devicename:nvidia"},
			want: &instancetypev1beta1.VirtualMachineClusterInstancetype{TypeMeta: typeMeta("VirtualMachineClusterInstancetype"),
				ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: withGPU}},
		{name: "GPUs, a host device, an I/O thread policy",
			args: []string{"instancetype", "--name=devices", "--cpu=4", "--memory=4Gi", "--gpu=name:a,devicename:nvidia.com/TU104GL",
				"--gpu=devicename:nvidia.com/GA102,name:b", "--hostdevice=name:nic,devicename:intel.com/qat", "--iothreadspolicy=shared"},
			want: &instancetypev1beta1.VirtualMachineClusterInstancetype{TypeMeta: typeMeta("VirtualMachineClusterInstancetype"),
				ObjectMeta: metav1.ObjectMeta{Name: "devices"}, Spec: withDevices}},
		{name: "an empty cluster-wide preference", args: []string{"preference", "--name=empty"},
			want: &instancetypev1beta1.VirtualMachineClusterPreference{TypeMeta: typeMeta("VirtualMachineClusterPreference"),
				ObjectMeta: metav1.ObjectMeta{Name: "empty"}}},
		{name: "a CPU topology", args: []string{"preference", "--name=p", "--cpu-topology", "sockets"},
			want: &instancetypev1beta1.VirtualMachineClusterPreference{TypeMeta: typeMeta("VirtualMachineClusterPreference"),
				ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: cpuTopology(instancetypev1beta1.Sockets)}},
		{name: "a namespaced preference, an old topology name", args: []string{"preference", "--name=p", "--cpu-topology", "preferCores", "--namespaced"},
			want: &instancetypev1beta1.VirtualMachinePreference{TypeMeta: typeMeta("VirtualMachinePreference"),
				ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: cpuTopology(instancetypev1beta1.DeprecatedPreferCores)}},
		{name: "storage class and machine type, -n",
			args: []string{"-n", "team-a", "preference", "--name=p", "--volume-storage-class", "hostpath-provisioner", "--machine-type=q35"},
			want: &instancetypev1beta1.VirtualMachinePreference{TypeMeta: typeMeta("VirtualMachinePreference"),
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"}, Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
					Volumes: &instancetypev1beta1.VolumePreferences{PreferredStorageClassName: "hostpath-provisioner"},
					Machine: &instancetypev1beta1.MachinePreferences{PreferredMachineType: "q35"},
				}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runCreate(t, tt.args...)
			require.NoError(t, err, stderr)
			// Both through YAML: quantities compare equal only in the same cached form.
			want, err := yaml.Marshal(tt.want)
			require.NoError(t, err)
			assert.Equal(t, decodedKind(t, string(want)), decodedKind(t, out), out)
		})
	}
}

// TestCreateInstancetypeAndPreferenceRefusals: bad values name their flag; no manifest.
func TestCreateInstancetypeAndPreferenceRefusals(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"instancetype", "--memory=1Gi"}, `required flag(s) "cpu" not set`},
		{[]string{"instancetype", "--cpu=1"}, `required flag(s) "memory" not set`},
		{[]string{"instancetype", "--cpu=0", "--memory=1Gi"}, `invalid --cpu "0": an instance type gives at least one vCPU`},
		{[]string{"instancetype", "--cpu=-1", "--memory=1Gi"}, `invalid argument "-1" for "--cpu"`},
		{[]string{"instancetype", "--cpu=1", "--memory=much"}, `invalid --memory "much"`},
		{[]string{"instancetype", "--cpu=1", "--memory=-1Gi"}, `invalid --memory "-1Gi"`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--gpu=name:gpu1"}, `invalid --gpu "name:gpu1": devicename must be given`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--hostdevice=devicename:x"}, `invalid --hostdevice "devicename:x": name must be given`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--gpu=name:g,devicename:d,tag:t"}, `unknown param "tag"`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--iothreadspolicy=supplementalPool"}, `invalid --iothreadspolicy "supplementalPool": want auto or shared`},
		{[]string{"instancetype", "--cpu=1", "--memory=1Gi", "--name=Big_One"}, `invalid --name "Big_One"`},
		{[]string{"preference", "--cpu-topology=diagonal"}, `invalid --cpu-topology "diagonal": want one of sockets, cores, threads, spread, any, preferSockets`},
		{[]string{"preference", "--name=-p"}, `invalid --name "-p"`},
		{[]string{"preference", "extra"}, `unknown command "extra" for "virtctl create preference"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := runCreate(t, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Empty(t, out)
		})
	}
}
