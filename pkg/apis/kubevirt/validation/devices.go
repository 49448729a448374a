package validation

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

var (
	supportedDiskBuses  = sets.New(kubevirt.DiskBusVirtio, kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedCDRomBuses = sets.New(kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedProtocols  = sets.New("TCP", "UDP")
	// supportedInterfaceModels are KubeVirt's NIC models but igb, which QEMU has only from 8.0
	// (the launcher runs 7.2).
	supportedInterfaceModels = sets.New("e1000", "e1000e", "ne2k_pci", "pcnet", "rtl8139", "virtio")
)

// validateDevices checks volumes, disks, networks and interfaces, and how they refer to
// each other.
func validateDevices(spec *kubevirt.VirtualMachineInstanceSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	domainPath := path.Child("domain")
	for _, list := range []struct {
		path *field.Path
		n    int
	}{
		{path.Child("volumes"), len(spec.Volumes)},
		{path.Child("networks"), len(spec.Networks)},
		{domainPath.Child("devices", "disks"), len(spec.Domain.Devices.Disks)},
		{domainPath.Child("devices", "interfaces"), len(spec.Domain.Devices.Interfaces)},
	} {
		if list.n > MaxDevices {
			allErrs = append(allErrs, field.TooMany(list.path, list.n, MaxDevices))
		}
	}
	if len(allErrs) > 0 {
		return allErrs // not worth walking
	}
	volumeNames := validateVolumes(spec.Volumes, path.Child("volumes"), &allErrs)
	for _, v := range spec.Volumes {
		if v.MemoryDump != nil {
			volumeNames.Delete(v.Name) // a memory dump's claim is no disk of the guest
		}
	}
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
	return allErrs
}

// validateVolumes checks each volume and returns the names of the well-formed ones.
func validateVolumes(volumes []kubevirt.Volume, path *field.Path, allErrs *field.ErrorList) sets.Set[string] {
	volumeNames := sets.New[string]()
	for i, v := range volumes {
		idx := path.Index(i)
		if !validateMemberName(v.Name, volumeNames, idx.Child("name"), allErrs) {
			continue
		}
		sources := 0
		if s := v.PersistentVolumeClaim; s != nil {
			sources++
			*allErrs = append(*allErrs, podrules.ValidateObjectName(s.ClaimName, idx.Child("persistentVolumeClaim", "claimName"))...)
			// The claim becomes a pod volume of the volume's name, mounted or (a block claim,
			// known only when the pod is built) a device at /dev/<name>.
			if layout.IsReservedPodVolume(v.Name) {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("name"), v.Name, "is the name of one of the launcher pod's own volumes"))
			}
			if layout.ShadowsContainerDevice(v.Name) {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("name"), v.Name,
					fmt.Sprintf("a block claim is given to the launcher as %s/%s, which the container needs", layout.BlockDeviceDir, v.Name)))
			}
		}
		if s := v.DataVolume; s != nil {
			sources++
			// The DataVolume's claim has its name, and is attached as a claim volume is.
			*allErrs = append(*allErrs, podrules.ValidateObjectName(s.Name, idx.Child("dataVolume", "name"))...)
			if layout.IsReservedPodVolume(v.Name) {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("name"), v.Name, "is the name of one of the launcher pod's own volumes"))
			}
			if layout.ShadowsContainerDevice(v.Name) {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("name"), v.Name,
					fmt.Sprintf("a block claim is given to the launcher as %s/%s, which the container needs", layout.BlockDeviceDir, v.Name)))
			}
		}
		if s := v.MemoryDump; s != nil {
			sources++
			*allErrs = append(*allErrs, podrules.ValidateObjectName(s.ClaimName, idx.Child("memoryDump", "claimName"))...)
			if !s.Hotpluggable {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("memoryDump", "hotpluggable"), false, "a memory dump's claim is always hotpluggable"))
			}
		}
		if s := v.CloudInitNoCloud; s != nil {
			sources++
			*allErrs = append(*allErrs, validateNoCloud(s, idx.Child("cloudInitNoCloud"))...)
		}
		if s := v.ContainerDisk; s != nil {
			sources++
			cdPath := idx.Child("containerDisk")
			*allErrs = append(*allErrs, podrules.ValidateImage(s.Image, cdPath.Child("image"))...)
			if s.ImagePullSecret != "" {
				*allErrs = append(*allErrs, podrules.ValidateObjectName(s.ImagePullSecret, cdPath.Child("imagePullSecret"))...)
			}
			*allErrs = append(*allErrs, validateImagePath(s.Path, cdPath.Child("path"))...)
			*allErrs = append(*allErrs, podrules.ValidatePullPolicy(s.ImagePullPolicy, cdPath.Child("imagePullPolicy"))...)
			if len(v.Name) > MaxContainerDiskVolumeName {
				*allErrs = append(*allErrs, field.TooLongMaxLength(idx.Child("name"), v.Name, MaxContainerDiskVolumeName))
			}
			// Mounted as an image volume, the disk is a pod volume of the volume's name.
			if layout.IsReservedPodVolume(v.Name) {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("name"), v.Name, "is the name of one of the launcher pod's own volumes"))
			}
		}
		if s := v.EmptyDisk; s != nil {
			sources++
			capPath := idx.Child("emptyDisk", "capacity")
			if s.Capacity.Sign() <= 0 {
				*allErrs = append(*allErrs, field.Invalid(capPath, s.Capacity.String(), "must be greater than zero"))
			} else if exceeds(s.Capacity, MaxEmptyDiskCapacity) {
				*allErrs = append(*allErrs, field.Invalid(capPath, s.Capacity.String(), fmt.Sprintf("must be at most %s", MaxEmptyDiskCapacity.String())))
			}
		}
		if sources != 1 {
			*allErrs = append(*allErrs, field.Invalid(idx, v.Name,
				fmt.Sprintf("must have exactly one source (persistentVolumeClaim, dataVolume, memoryDump, cloudInitNoCloud, containerDisk, emptyDisk), has %d", sources)))
		}
	}
	return volumeNames
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
	for _, data := range []struct {
		name, value string
		base64      bool
		max         int
		secret      string
	}{
		{"userData", s.UserData, false, MaxCloudInitUserData, "secretRef"},
		{"userDataBase64", s.UserDataBase64, true, MaxCloudInitUserData, "secretRef"},
		{"networkData", s.NetworkData, false, MaxCloudInitNetworkData, "networkDataSecretRef"},
		{"networkDataBase64", s.NetworkDataBase64, true, MaxCloudInitNetworkData, "networkDataSecretRef"},
	} {
		size, unit := len(data.value), "bytes"
		if data.base64 && data.value != "" {
			// Longer than max encodes to: too long whatever it decodes to, so not decoded.
			unit = "characters of base64"
			if len(data.value) <= base64.StdEncoding.EncodedLen(data.max) {
				decoded, err := base64.StdEncoding.DecodeString(data.value)
				if err != nil {
					allErrs = append(allErrs, field.Invalid(path.Child(data.name), "<base64>", fmt.Sprintf("is not valid base64: %v", err)))
					continue
				}
				size, unit = len(decoded), "bytes decoded"
			}
		}
		if size > data.max {
			tooLong := field.TooLong(path.Child(data.name), "", data.max)
			tooLong.Detail += fmt.Sprintf(" (has %d %s); larger data belongs in a Secret (%s)", size, unit, data.secret)
			allErrs = append(allErrs, tooLong)
		}
	}
	if ref := s.UserDataSecretRef; ref != nil {
		allErrs = append(allErrs, podrules.ValidateObjectName(ref.Name, path.Child("secretRef", "name"))...)
	}
	if ref := s.NetworkDataSecretRef; ref != nil {
		allErrs = append(allErrs, podrules.ValidateObjectName(ref.Name, path.Child("networkDataSecretRef", "name"))...)
	}
	return allErrs
}

func validateNetworks(networks []kubevirt.Network, path *field.Path, allErrs *field.ErrorList) sets.Set[string] {
	networkNames := sets.New[string]()
	podNetworks := 0
	for i, n := range networks {
		idx := path.Index(i)
		if !validateMemberName(n.Name, networkNames, idx.Child("name"), allErrs) {
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
			if msg := vmNetworkProblem(cidr); msg != "" {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("pod", "vmNetworkCIDR"), cidr, msg))
			}
		}
	}
	return networkNames
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")   // RFC 1122: never a destination
	reservedE   = netip.MustParsePrefix("240.0.0.0/4") // RFC 1112: reserved, refused by guests' stacks
)

// vmNetworkProblem says what makes cidr unusable as the masquerade binding's guest network,
// or "". The binding (pkg/podnetwork) takes the network's first address for the
// gateway and the second for the guest, so the prefix needs four addresses (network,
// gateway, guest, broadcast), and both must be unicast addresses a guest can use.
func vmNetworkProblem(cidr string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return "must be an IPv4 CIDR such as 10.0.2.0/24"
	}
	if p.Bits() > 30 {
		return "must leave room for a gateway and a guest address: a prefix of at most /30"
	}
	gw := p.Masked().Addr().Next()
	guest := gw.Next()
	for _, a := range []netip.Addr{gw, guest} {
		if !a.IsGlobalUnicast() || thisNetwork.Contains(a) || reservedE.Contains(a) {
			return fmt.Sprintf("the gateway %s and guest %s addresses it gives must be unicast addresses (not loopback, link-local, multicast, 0.0.0.0/8 or 240.0.0.0/4)", gw, guest)
		}
	}
	return ""
}

func validateDisks(disks []kubevirt.Disk, volumes sets.Set[string], bootOrders map[uint]string, path *field.Path, allErrs *field.ErrorList) {
	diskNames := sets.New[string]()
	for i, d := range disks {
		idx := path.Index(i)
		if !validateMemberName(d.Name, diskNames, idx.Child("name"), allErrs) {
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
		*allErrs = append(*allErrs, validateSerial(d.Serial, idx.Child("serial"))...)
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
	ifaceNames := sets.New[string]()
	for i, iface := range ifaces {
		idx := path.Index(i)
		if !validateMemberName(iface.Name, ifaceNames, idx.Child("name"), allErrs) {
			continue
		}
		if !networkNames.Has(iface.Name) {
			*allErrs = append(*allErrs, field.NotFound(idx.Child("name"), iface.Name))
		}
		if iface.Bridge != nil && iface.Masquerade != nil {
			*allErrs = append(*allErrs, field.Invalid(idx, iface.Name, "only one of bridge and masquerade may be set"))
		}
		if iface.Model != "" && !supportedInterfaceModels.Has(iface.Model) {
			*allErrs = append(*allErrs, field.NotSupported(idx.Child("model"), iface.Model, sets.List(supportedInterfaceModels)))
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
			if msg := macProblem(iface.MacAddress); msg != "" {
				*allErrs = append(*allErrs, field.Invalid(idx.Child("macAddress"), iface.MacAddress, msg))
			}
		}
		validateBootOrder(iface.BootOrder, "interface "+iface.Name, bootOrders, idx.Child("bootOrder"), allErrs)
	}
	return ifaceNames
}

// macProblem says what makes mac unusable as a guest NIC's address, or "": it must be a
// MAC-48 address (any spelling net.ParseMAC reads, as KubeVirt accepts), unicast (a
// multicast source address is refused by bridges and switches) and not all zeros.
func macProblem(mac string) string {
	hw, err := net.ParseMAC(mac)
	switch {
	case err != nil || len(hw) != 6:
		return "must be a MAC-48 address such as de:ad:00:00:be:af"
	case hw[0]&1 != 0:
		return "must be a unicast address: the least significant bit of the first octet (I/G) must be 0"
	case hw.String() == "00:00:00:00:00:00":
		return "must not be all zeros"
	}
	return ""
}

func validateBootOrder(order *uint, device string, seen map[uint]string, path *field.Path, allErrs *field.ErrorList) {
	if order == nil {
		return
	}
	if *order == 0 {
		*allErrs = append(*allErrs, field.Invalid(path, *order, "must be greater than zero"))
		return
	}
	if *order > MaxBootOrder {
		*allErrs = append(*allErrs, field.Invalid(path, *order, fmt.Sprintf("must be at most %d (QEMU's bootindex is an int32)", MaxBootOrder)))
		return
	}
	if other, ok := seen[*order]; ok {
		*allErrs = append(*allErrs, field.Invalid(path, *order, fmt.Sprintf("already used by %s", other)))
		return
	}
	seen[*order] = device
}
