package validation

import (
	"encoding/base64"
	"fmt"
	"net"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// MinGuestMemory is the smallest guest KubeVirt accepts; a guest kernel needs far more, but
// that is the guest's business.
var MinGuestMemory = resource.MustParse("1Mi")

var (
	supportedDiskBuses  = sets.New(kubevirt.DiskBusVirtio, kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedCDRomBuses = sets.New(kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedEvictions  = sets.New(kubevirt.EvictionStrategyNone, kubevirt.EvictionStrategyLiveMigrate,
		kubevirt.EvictionStrategyLiveMigrateIfPossible, kubevirt.EvictionStrategyExternal)
	supportedProtocols    = sets.New("TCP", "UDP")
	supportedPullPolicies = sets.New(corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent)
)

// ValidateVirtualMachineInstanceSpec validates a guest's specification, for instances and for
// the templates of VMs and replica sets alike.
func ValidateVirtualMachineInstanceSpec(spec *kubevirt.VirtualMachineInstanceSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	domainPath := path.Child("domain")
	allErrs = append(allErrs, validateResourcesAndMemory(&spec.Domain, domainPath)...)
	allErrs = append(allErrs, validateCPU(spec.Domain.CPU, domainPath.Child("cpu"))...)
	allErrs = append(allErrs, validateFirmware(spec.Domain.Firmware, domainPath.Child("firmware"))...)

	volumeNames := validateVolumes(spec.Volumes, path.Child("volumes"), &allErrs)
	networkNames := validateNetworks(spec.Networks, path.Child("networks"), &allErrs)
	bootOrders := map[uint]string{}
	// Defaulting attaches every volume as a disk, so only disks can point at nothing.
	validateDisks(spec.Domain.Devices.Disks, volumeNames, bootOrders, domainPath.Child("devices", "disks"), &allErrs)
	usedNetworks := validateInterfaces(spec.Domain.Devices.Interfaces, spec.Networks, bootOrders, domainPath.Child("devices", "interfaces"), &allErrs)
	for i, n := range spec.Networks {
		if n.Name != "" && networkNames.Has(n.Name) && !usedNetworks.Has(n.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("networks").Index(i).Child("name"), n.Name, "no interface uses this network"))
		}
	}

	if spec.Hostname != "" {
		for _, msg := range utilvalidation.IsDNS1123Label(spec.Hostname) {
			allErrs = append(allErrs, field.Invalid(path.Child("hostname"), spec.Hostname, msg))
		}
	}
	if spec.Subdomain != "" {
		for _, msg := range utilvalidation.IsDNS1123Label(spec.Subdomain) {
			allErrs = append(allErrs, field.Invalid(path.Child("subdomain"), spec.Subdomain, msg))
		}
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector"))...)
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	if spec.EvictionStrategy != nil && !supportedEvictions.Has(*spec.EvictionStrategy) {
		allErrs = append(allErrs, field.NotSupported(path.Child("evictionStrategy"), *spec.EvictionStrategy, sets.List(supportedEvictions)))
	}
	if spec.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.StartStrategy != nil && *spec.StartStrategy != kubevirt.StartStrategyPaused {
		allErrs = append(allErrs, field.NotSupported(path.Child("startStrategy"), *spec.StartStrategy,
			[]kubevirt.StartStrategy{kubevirt.StartStrategyPaused}))
	}
	return allErrs
}

func validateResourcesAndMemory(domain *kubevirt.DomainSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	resPath := path.Child("resources")
	for name, q := range domain.Resources.Requests {
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(resPath.Child("requests").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	for name, limit := range domain.Resources.Limits {
		if limit.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(resPath.Child("limits").Key(string(name)), limit.String(), "must not be negative"))
		}
		if req, ok := domain.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(resPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit %s", name, limit.String())))
		}
	}

	guestPath := path.Child("memory", "guest")
	if domain.Memory == nil || domain.Memory.Guest == nil {
		return append(allErrs, field.Required(guestPath,
			"the guest needs memory: set domain.memory.guest or domain.resources.requests.memory"))
	}
	guest := *domain.Memory.Guest
	if guest.Cmp(MinGuestMemory) < 0 {
		allErrs = append(allErrs, field.Invalid(guestPath, guest.String(),
			fmt.Sprintf("must be at least %s", MinGuestMemory.String())))
	}
	if limit, ok := domain.Resources.Limits[corev1.ResourceMemory]; ok && guest.Cmp(limit) > 0 {
		allErrs = append(allErrs, field.Invalid(guestPath, guest.String(),
			fmt.Sprintf("must be less than or equal to the memory limit %s", limit.String())))
	}
	return allErrs
}

func validateCPU(cpu *kubevirt.CPU, path *field.Path) field.ErrorList {
	if cpu == nil {
		return nil
	}
	var allErrs field.ErrorList
	for name, n := range map[string]uint32{"cores": cpu.Cores, "sockets": cpu.Sockets, "threads": cpu.Threads} {
		if n == 0 {
			allErrs = append(allErrs, field.Invalid(path.Child(name), n, "must be at least 1"))
		}
	}
	return allErrs
}

func validateFirmware(fw *kubevirt.Firmware, path *field.Path) field.ErrorList {
	if fw == nil || fw.KernelBoot == nil {
		return nil
	}
	var allErrs field.ErrorList
	kbPath := path.Child("kernelBoot")
	c := fw.KernelBoot.Container
	if c == nil {
		if fw.KernelBoot.KernelArgs != "" {
			allErrs = append(allErrs, field.Required(kbPath.Child("container"), "kernelArgs need a kernel from a kernelBoot container"))
		}
		return allErrs
	}
	cPath := kbPath.Child("container")
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(cPath.Child("image"), "the image that carries the kernel"))
	}
	if c.KernelPath == "" && c.InitrdPath == "" {
		allErrs = append(allErrs, field.Required(cPath, "at least one of kernelPath and initrdPath must be set"))
	}
	if c.KernelPath == "" && fw.KernelBoot.KernelArgs != "" {
		allErrs = append(allErrs, field.Required(cPath.Child("kernelPath"), "kernelArgs need a kernel"))
	}
	allErrs = append(allErrs, validateImagePath(c.KernelPath, cPath.Child("kernelPath"))...)
	allErrs = append(allErrs, validateImagePath(c.InitrdPath, cPath.Child("initrdPath"))...)
	allErrs = append(allErrs, validatePullPolicy(c.ImagePullPolicy, cPath.Child("imagePullPolicy"))...)
	return allErrs
}

// validateImagePath accepts absolute, clean paths inside an image: the launcher reads them
// from the image's root and must not be led outside it.
func validateImagePath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return nil
	}
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "..") {
		return field.ErrorList{field.Invalid(fldPath, p, "must be an absolute, clean path without '..'")}
	}
	return nil
}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	if policy != "" && !supportedPullPolicies.Has(policy) {
		return field.ErrorList{field.NotSupported(fldPath, policy, sets.List(supportedPullPolicies))}
	}
	return nil
}

// validateVolumes checks each volume and returns the names of the well-formed ones.
func validateVolumes(volumes []kubevirt.Volume, path *field.Path, allErrs *field.ErrorList) sets.Set[string] {
	names := sets.New[string]()
	for i, v := range volumes {
		idx := path.Index(i)
		if !validateMemberName(v.Name, names, idx.Child("name"), allErrs) {
			continue
		}
		sources := 0
		if s := v.PersistentVolumeClaim; s != nil {
			sources++
			if s.ClaimName == "" {
				*allErrs = append(*allErrs, field.Required(idx.Child("persistentVolumeClaim", "claimName"), ""))
			}
		}
		if s := v.CloudInitNoCloud; s != nil {
			sources++
			*allErrs = append(*allErrs, validateNoCloud(s, idx.Child("cloudInitNoCloud"))...)
		}
		if s := v.ContainerDisk; s != nil {
			sources++
			if s.Image == "" {
				*allErrs = append(*allErrs, field.Required(idx.Child("containerDisk", "image"), "the image that carries the disk"))
			}
			*allErrs = append(*allErrs, validateImagePath(s.Path, idx.Child("containerDisk", "path"))...)
			*allErrs = append(*allErrs, validatePullPolicy(s.ImagePullPolicy, idx.Child("containerDisk", "imagePullPolicy"))...)
		}
		if s := v.EmptyDisk; s != nil {
			sources++
			if s.Capacity.Sign() <= 0 {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("emptyDisk", "capacity"), s.Capacity.String(), "must be greater than zero"))
			}
		}
		if sources != 1 {
			*allErrs = append(*allErrs, field.Invalid(idx, v.Name,
				fmt.Sprintf("must have exactly one source (persistentVolumeClaim, cloudInitNoCloud, containerDisk, emptyDisk), has %d", sources)))
		}
	}
	return names
}

func validateNoCloud(s *kubevirt.CloudInitNoCloudSource, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	userSources := 0
	for _, set := range []bool{s.UserData != "", s.UserDataBase64 != "", s.UserDataSecretRef != nil} {
		if set {
			userSources++
		}
	}
	networkSources := 0
	for _, set := range []bool{s.NetworkData != "", s.NetworkDataBase64 != "", s.NetworkDataSecretRef != nil} {
		if set {
			networkSources++
		}
	}
	if userSources+networkSources == 0 {
		allErrs = append(allErrs, field.Required(path, "one of userData, userDataBase64, secretRef, networkData, networkDataBase64 or networkDataSecretRef"))
	}
	if userSources > 1 {
		allErrs = append(allErrs, field.Invalid(path, "", "only one of userData, userDataBase64 and secretRef may be set"))
	}
	if networkSources > 1 {
		allErrs = append(allErrs, field.Invalid(path, "", "only one of networkData, networkDataBase64 and networkDataSecretRef may be set"))
	}
	// The launcher pod mounts each Secret as a volume: its name must be a Secret's.
	for _, ref := range []struct {
		field string
		ref   *corev1.LocalObjectReference
	}{{"secretRef", s.UserDataSecretRef}, {"networkDataSecretRef", s.NetworkDataSecretRef}} {
		if ref.ref == nil {
			continue
		}
		namePath := path.Child(ref.field, "name")
		if ref.ref.Name == "" {
			allErrs = append(allErrs, field.Required(namePath, "the name of a Secret in the instance's namespace"))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(ref.ref.Name) {
			allErrs = append(allErrs, field.Invalid(namePath, ref.ref.Name, msg))
		}
	}
	for name, data := range map[string]string{"userDataBase64": s.UserDataBase64, "networkDataBase64": s.NetworkDataBase64} {
		if _, err := base64.StdEncoding.DecodeString(data); data != "" && err != nil {
			allErrs = append(allErrs, field.Invalid(path.Child(name), "<base64>", fmt.Sprintf("is not valid base64: %v", err)))
		}
	}
	return allErrs
}

func validateNetworks(networks []kubevirt.Network, path *field.Path, allErrs *field.ErrorList) sets.Set[string] {
	names := sets.New[string]()
	podNetworks := 0
	for i, n := range networks {
		idx := path.Index(i)
		if !validateMemberName(n.Name, names, idx.Child("name"), allErrs) {
			continue
		}
		if n.Pod == nil {
			*allErrs = append(*allErrs, field.Required(idx.Child("pod"), "a network needs a source; pod is the one supported"))
			continue
		}
		podNetworks++
		if podNetworks > 1 {
			*allErrs = append(*allErrs, field.Invalid(idx.Child("pod"), n.Name, "only one network may be the pod network"))
		}
		if cidr := n.Pod.VMNetworkCIDR; cidr != "" {
			if ip, _, err := net.ParseCIDR(cidr); err != nil || ip.To4() == nil {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("pod", "vmNetworkCIDR"), cidr, "must be an IPv4 CIDR"))
			}
		}
	}
	return names
}

func validateDisks(disks []kubevirt.Disk, volumes sets.Set[string], bootOrders map[uint]string, path *field.Path, allErrs *field.ErrorList) {
	names := sets.New[string]()
	for i, d := range disks {
		idx := path.Index(i)
		if !validateMemberName(d.Name, names, idx.Child("name"), allErrs) {
			continue
		}
		if !volumes.Has(d.Name) {
			*allErrs = append(*allErrs, field.NotFound(idx.Child("name"), d.Name))
		}
		switch {
		case d.Disk != nil && d.CDRom != nil:
			*allErrs = append(*allErrs, field.Invalid(idx, d.Name, "only one of disk and cdrom may be set"))
		case d.Disk != nil:
			if d.Disk.Bus != "" && !supportedDiskBuses.Has(d.Disk.Bus) {
				*allErrs = append(*allErrs, field.NotSupported(idx.Child("disk", "bus"), d.Disk.Bus, sets.List(supportedDiskBuses)))
			}
		case d.CDRom != nil:
			if d.CDRom.Bus != "" && !supportedCDRomBuses.Has(d.CDRom.Bus) {
				*allErrs = append(*allErrs, field.NotSupported(idx.Child("cdrom", "bus"), d.CDRom.Bus, sets.List(supportedCDRomBuses)))
			}
			if d.CDRom.ReadOnly != nil && !*d.CDRom.ReadOnly {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("cdrom", "readonly"), false, "a CD-ROM is read-only"))
			}
		}
		validateBootOrder(d.BootOrder, "disk "+d.Name, bootOrders, idx.Child("bootOrder"), allErrs)
	}
}

// validateInterfaces checks the interfaces and returns the networks they use.
func validateInterfaces(ifaces []kubevirt.Interface, networks []kubevirt.Network, bootOrders map[uint]string, path *field.Path, allErrs *field.ErrorList) sets.Set[string] {
	// The pod network is the only kind, so any network serves any binding.
	networkNames := sets.New[string]()
	for _, n := range networks {
		networkNames.Insert(n.Name)
	}
	names := sets.New[string]()
	for i, iface := range ifaces {
		idx := path.Index(i)
		if !validateMemberName(iface.Name, names, idx.Child("name"), allErrs) {
			continue
		}
		if !networkNames.Has(iface.Name) {
			*allErrs = append(*allErrs, field.NotFound(idx.Child("name"), iface.Name))
		}
		if iface.Bridge != nil && iface.Masquerade != nil {
			*allErrs = append(*allErrs, field.Invalid(idx, iface.Name, "only one of bridge and masquerade may be set"))
		}
		// Ports are checked on every binding, as KubeVirt does; with bridge they only inform
		// (the guest has the pod's address and receives every port).
		for j, p := range iface.Ports {
			pPath := idx.Child("ports").Index(j)
			for _, msg := range utilvalidation.IsValidPortNum(int(p.Port)) {
				*allErrs = append(*allErrs, field.Invalid(pPath.Child("port"), p.Port, msg))
			}
			if p.Protocol != "" && !supportedProtocols.Has(p.Protocol) {
				*allErrs = append(*allErrs, field.NotSupported(pPath.Child("protocol"), p.Protocol, sets.List(supportedProtocols)))
			}
		}
		if iface.MacAddress != "" {
			if mac, err := net.ParseMAC(iface.MacAddress); err != nil || len(mac) != 6 {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("macAddress"), iface.MacAddress, "must be a MAC-48 address such as de:ad:00:00:be:af"))
			}
		}
		validateBootOrder(iface.BootOrder, "interface "+iface.Name, bootOrders, idx.Child("bootOrder"), allErrs)
	}
	return names
}

// validateMemberName checks a list member's name is set, a DNS label and unique in its list.
func validateMemberName(name string, seen sets.Set[string], path *field.Path, allErrs *field.ErrorList) bool {
	if name == "" {
		*allErrs = append(*allErrs, field.Required(path, ""))
		return false
	}
	if seen.Has(name) {
		*allErrs = append(*allErrs, field.Duplicate(path, name))
		return false
	}
	seen.Insert(name)
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		*allErrs = append(*allErrs, field.Invalid(path, name, msg))
	}
	return true
}

func validateBootOrder(order *uint, device string, seen map[uint]string, path *field.Path, allErrs *field.ErrorList) {
	if order == nil {
		return
	}
	if *order == 0 {
		*allErrs = append(*allErrs, field.Invalid(path, *order, "must be greater than zero"))
		return
	}
	if other, ok := seen[*order]; ok {
		*allErrs = append(*allErrs, field.Invalid(path, *order, fmt.Sprintf("already used by %s", other)))
		return
	}
	seen[*order] = device
}

var (
	supportedTolerationOperators = sets.New(corev1.TolerationOpExists, corev1.TolerationOpEqual)
	supportedTaintEffects        = sets.New(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
)

// validateTolerations checks what the launcher pod would otherwise be rejected for later,
// so the error reaches the user at the VMI, with its path.
func validateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idx := path.Index(i)
		if t.Key != "" {
			for _, msg := range utilvalidation.IsQualifiedName(t.Key) {
				allErrs = append(allErrs, field.Invalid(idx.Child("key"), t.Key, msg))
			}
		}
		if t.Operator != "" && !supportedTolerationOperators.Has(t.Operator) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("operator"), t.Operator, sets.List(supportedTolerationOperators)))
		}
		if t.Operator == corev1.TolerationOpExists && t.Value != "" {
			allErrs = append(allErrs, field.Invalid(idx.Child("value"), t.Value, "must be empty when operator is Exists"))
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idx.Child("operator"), t.Operator, "must be Exists when key is empty"))
		}
		if t.Effect != "" && !supportedTaintEffects.Has(t.Effect) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("effect"), t.Effect, sets.List(supportedTaintEffects)))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idx.Child("tolerationSeconds"), *t.TolerationSeconds, "needs effect NoExecute"))
		}
	}
	return allErrs
}
