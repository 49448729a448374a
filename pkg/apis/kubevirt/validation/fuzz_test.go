package validation_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/install"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
	"github.com/hangarvm/hangar/pkg/apiserver/bodyguard"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/podnetwork"
)

// The fuzz targets hold validation to its promise: whatever it accepts, the rest of Hangar
// can run. Each decodes input as virt-api does (the body guard, JSON into v1, the scheme's
// defaults, then the internal version), validates it, and for an accepted object checks
// that the launcher pod builds and passes the pod API's rules (podrules.ValidatePod), and
// that the launcher's domain and network plans come out. Nothing may panic or hang on the
// way. CI runs each target briefly (hack/fuzz.sh); inputs that once failed are kept in
// testdata/fuzz.

var (
	scheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		install.Install(s)
		return s
	}()
	// decoder decodes, defaults and converts to the internal version, as virt-api's codec.
	decoder = serializer.NewCodecFactory(scheme).UniversalDecoder(kubevirt.SchemeGroupVersion)
)

func decode(data []byte, defaultKind string) (runtime.Object, bool) {
	if bodyguard.CheckJSON(data) != "" {
		return nil, false // virt-api refuses the body before decoding it (a 400)
	}
	gvk := v1.SchemeGroupVersion.WithKind(defaultKind)
	obj, _, err := decoder.Decode(data, &gvk, nil)
	return obj, err == nil // malformed input is a 400 before validation
}

// toV1 converts an internal object to v1, as the controllers read it.
func toV1[E any](t *testing.T, in runtime.Object) *E {
	t.Helper()
	out := new(E)
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("convert %T to v1: %v", in, err)
	}
	return out
}

func dump(obj any) string {
	b, _ := json.Marshal(obj)
	return string(b)
}

// fillMeta gives an object without name or namespace the ones the API server would have
// (from the URL), so the fuzzer's effort goes into the spec.
func fillMeta(name, namespace *string) {
	if *name == "" {
		*name = "fuzz"
	}
	if *namespace == "" {
		*namespace = "ns"
	}
}

// hangAfter is far beyond what admitting one object takes (microseconds to milliseconds).
const hangAfter = 10 * time.Second

// watchdog turns a hang into a crash that names the input: the fuzzer has no time limit of
// its own and would only stall. A quantity of 1e999999999 once kept defaulting busy for
// hours; one request like it would occupy virt-api as long. Call as defer watchdog(input)().
func watchdog(input any) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(hangAfter):
			panic(fmt.Sprintf("admitting this input took over %s: %q", hangAfter, input))
		}
	}()
	return func() { close(done) }
}

// checkRunnable asserts an accepted instance runs: its launcher pod builds and passes the
// pod API's rules whatever its claims turn out to be, the domain converts, the network plans.
func checkRunnable(t *testing.T, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	vmi.UID = "6a1a24a1-4061-4607-8bf4-a3963d0c5895"
	cfg := clusterconfig.Defaults()
	for _, mode := range []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock} {
		modes := launcherpod.VolumeModes{}
		for _, c := range launcherpod.ClaimNames(vmi) {
			modes[c] = mode
		}
		if vmi.Spec.NeedsStateClaim() {
			// The state claim must hold files: a Block one is refused when the pod is built
			// (the controller's event says so), whatever the spec.
			modes[launcherpod.StateClaimName(vmi)] = corev1.PersistentVolumeFilesystem
		}
		pod, err := launcherpod.Build(vmi, modes, &cfg)
		if err != nil {
			t.Fatalf("accepted instance, launcher pod (%s claims) fails: %v\n%s", mode, err, dump(vmi))
		}
		if errs := podrules.ValidatePod(pod); len(errs) > 0 {
			t.Fatalf("accepted instance, launcher pod (%s claims) the pod API refuses: %v\n%s", mode, errs.ToAggregate(), dump(vmi))
		}
		if g := *pod.Spec.TerminationGracePeriodSeconds; g < 0 || g > math.MaxInt64/int64(time.Second) {
			t.Fatalf("grace period %d s overflows a time.Duration\n%s", g, dump(vmi))
		}
	}

	opts := domain.Options{
		UseEmulation: true, Layout: domain.DefaultLayout("/run/launcher"), KernelBootRoot: "/kernel-boot",
		ContainerDisks: map[string]domain.Image{}, BlockVolumes: map[string]bool{}, Taps: map[string]string{},
	}
	for _, v := range vmi.Spec.Volumes {
		if v.ContainerDisk != nil {
			opts.ContainerDisks[v.Name] = domain.Image{Path: "/disk/" + v.Name + ".qcow2", Format: "qcow2"}
		}
	}
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		opts.Taps[iface.Name] = fmt.Sprintf("tap%d", i)
	}
	d, err := domain.Convert(vmi, opts)
	if err != nil {
		t.Fatalf("accepted instance, domain fails: %v\n%s", err, dump(vmi))
	}
	if d.VCPU.Value < 1 || d.VCPU.Value > validation.MaxVCPUs || d.Memory.Value < 1 {
		t.Fatalf("accepted instance, domain with %d vCPUs and %d KiB\n%s", d.VCPU.Value, d.Memory.Value, dump(vmi))
	}
	if _, err := d.Marshal(); err != nil {
		t.Fatalf("accepted instance, domain XML fails: %v\n%s", err, dump(vmi))
	}
	if _, err := podnetwork.Plans(vmi); err != nil {
		t.Fatalf("accepted instance, network plan fails: %v\n%s", err, dump(vmi))
	}
}

// admitInstance validates an instance as virt-api does on create and, if it is accepted,
// checks it runs.
func admitInstance(t *testing.T, vmi *kubevirt.VirtualMachineInstance) field.ErrorList {
	t.Helper()
	errs := validation.ValidateVirtualMachineInstance(vmi)
	if len(errs) == 0 {
		checkRunnable(t, toV1[v1.VirtualMachineInstance](t, vmi))
	}
	return errs
}

func FuzzVirtualMachineInstance(f *testing.F) {
	for _, s := range instanceSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog(data)()
		obj, ok := decode(data, "VirtualMachineInstance")
		if !ok {
			return
		}
		vmi, ok := obj.(*kubevirt.VirtualMachineInstance)
		if !ok {
			return
		}
		fillMeta(&vmi.Name, &vmi.Namespace)
		admitInstance(t, vmi)
	})
}

// FuzzTemplates fuzzes VirtualMachines and replica sets (by the input's kind): an accepted
// template must give an instance that virt-api accepts in turn, and that runs.
func FuzzTemplates(f *testing.F) {
	for _, s := range templateSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog(data)()
		obj, ok := decode(data, "VirtualMachine")
		if !ok {
			return
		}
		var vmi *kubevirt.VirtualMachineInstance
		switch o := obj.(type) {
		case *kubevirt.VirtualMachine:
			fillMeta(&o.Name, &o.Namespace)
			if len(validation.ValidateVirtualMachine(o)) > 0 {
				return
			}
			// As the VM controller (pkg/controller/vm vmiFromVM): the VM's name, the
			// template's metadata and spec, a firmware UUID.
			vmi = &kubevirt.VirtualMachineInstance{Spec: *o.Spec.Template.Spec.DeepCopy()}
			vmi.Name, vmi.Namespace = o.Name, o.Namespace
			vmi.Labels, vmi.Annotations = o.Spec.Template.ObjectMeta.Labels, o.Spec.Template.ObjectMeta.Annotations
			if vmi.Spec.Domain.Firmware == nil {
				vmi.Spec.Domain.Firmware = &kubevirt.Firmware{}
			}
			if vmi.Spec.Domain.Firmware.UUID == "" {
				vmi.Spec.Domain.Firmware.UUID = "0f6e4f9b-4f3c-5b8e-9c1e-2a7d3c9b1f00"
			}
		case *kubevirt.VirtualMachineInstanceReplicaSet:
			fillMeta(&o.Name, &o.Namespace)
			if len(validation.ValidateVirtualMachineInstanceReplicaSet(o)) > 0 {
				return
			}
			// As the replica set controller: generateName is the set's name.
			vmi = &kubevirt.VirtualMachineInstance{Spec: *o.Spec.Template.Spec.DeepCopy()}
			vmi.Name, vmi.Namespace = names.SimpleNameGenerator.GenerateName(o.Name), o.Namespace
			vmi.Labels, vmi.Annotations = o.Spec.Template.ObjectMeta.Labels, o.Spec.Template.ObjectMeta.Annotations
		default:
			return
		}
		if errs := admitInstance(t, vmi); len(errs) > 0 {
			t.Fatalf("accepted template, its instance is refused: %v\n%s", errs.ToAggregate(), dump(obj))
		}
	})
}

// FuzzBounds drives the numeric and formatted fields directly, where byte mutations of
// JSON rarely reach: topology, quantities, the grace period, boot order, MAC, CIDR, a
// volume name, an image.
func FuzzBounds(f *testing.F) {
	f.Add(uint32(1), uint32(1), uint32(1), "128Mi", "100m", "1Gi", int64(30), uint64(1), "de:ad:00:00:be:af", "10.0.2.0/24", "root", "example/disk:1")
	f.Add(uint32(1<<21), uint32(1<<21), uint32(1<<21), "16Ti", "288", "16Ti", int64(math.MaxInt64), uint64(math.MaxUint32+1), "01:00:5e:00:00:01", "10.0.2.0/31", "a-volume-name-of-exactly-forty-nine-characters-01", "Example/Disk")
	f.Add(uint32(9), uint32(4), uint32(8), "1e30", "1e18", "-1", int64(-1), uint64(0), "00:00:00:00:00:00", "0.0.0.0/8", "0", "reg:5000/d@sha256:00")
	// At the bounds, valid: a step past any one of them must be refused.
	f.Add(uint32(288), uint32(1), uint32(1), "16Ti", "288", "16Ti", int64(365*24*3600), uint64(math.MaxInt32), "02:00:00:00:00:00",
		"192.168.0.4/30", "a-volume-name-of-exactly-forty-eight-characters0", "registry.local:5000/disks/fedora:40")
	f.Fuzz(func(t *testing.T, cores, sockets, threads uint32, memory, cpu, capacity string, grace int64, bootOrder uint64,
		mac, cidr, volume, image string) {
		defer watchdog([]any{cores, sockets, threads, memory, cpu, capacity, grace, bootOrder, mac, cidr, volume, image})()
		volume = labelish(volume)
		q := func(s string) (resource.Quantity, bool) {
			if bodyguard.Problem(s) != "" {
				return resource.Quantity{}, false // refused before decoding
			}
			v, err := resource.ParseQuantity(s)
			return v, err == nil // an unparsable quantity is a 400 at decoding
		}
		mem, ok1 := q(memory)
		cpuQ, ok2 := q(cpu)
		capQ, ok3 := q(capacity)
		if !ok1 || !ok2 || !ok3 {
			return
		}
		in := &v1.VirtualMachineInstance{}
		in.Name, in.Namespace = "fuzz", "ns"
		in.Spec = v1.VirtualMachineInstanceSpec{
			Domain: v1.DomainSpec{
				CPU: &v1.CPU{Cores: cores, Sockets: sockets, Threads: threads},
				Resources: v1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: mem, corev1.ResourceCPU: cpuQ},
				},
				Devices: v1.Devices{
					Disks: []v1.Disk{{Name: volume, BootOrder: ptr.To(uint(bootOrder))}, {Name: "scratch"}},
					Interfaces: []v1.Interface{{Name: "default", MacAddress: mac,
						InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}},
				},
			},
			TerminationGracePeriodSeconds: &grace,
			Volumes: []v1.Volume{
				{Name: volume, VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: image}}},
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: capQ}}},
			},
			Networks: []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{VMNetworkCIDR: cidr}}}},
		}
		scheme.Default(in)
		internal := &kubevirt.VirtualMachineInstance{}
		if err := scheme.Convert(in, internal, nil); err != nil {
			t.Fatalf("convert: %v", err)
		}
		admitInstance(t, internal)
	})
}

// labelish maps s onto the characters of a DNS label, keeping its length: the volume name's
// length is what the bounds are about, and random bytes would rarely make a valid name.
func labelish(s string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	b := []byte(s)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// The seeds must be accepted, or the fuzzer would start far from what runs.
func TestFuzzSeedsAreAccepted(t *testing.T) {
	for i, s := range append(append([]string{}, instanceSeeds...), templateSeeds...) {
		obj, ok := decode([]byte(s), "VirtualMachineInstance")
		if !ok {
			t.Fatalf("seed %d does not decode", i)
		}
		var errs field.ErrorList
		switch o := obj.(type) {
		case *kubevirt.VirtualMachineInstance:
			errs = admitInstance(t, o)
		case *kubevirt.VirtualMachine:
			errs = validation.ValidateVirtualMachine(o)
		case *kubevirt.VirtualMachineInstanceReplicaSet:
			errs = validation.ValidateVirtualMachineInstanceReplicaSet(o)
		}
		if len(errs) > 0 {
			t.Errorf("seed %d is refused: %v", i, errs.ToAggregate())
		}
	}
}
