package handler

import (
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// What the guest agent says comes from the guest, through the launcher: both are the tenant's.
// The handler keeps of it only what fits these bounds and forms, in the instance's status
// and in the guestosinfo, userlist and filesystemlist answers.
const (
	maxAgentString       = 256  // an OS name, a user name, a file system type
	maxAgentPath         = 1024 // a mount point
	maxAgentInterfaces   = api.MaxAgentInterfaces
	maxAgentIPs          = api.MaxAgentIPs
	maxGuestOnlyIfaces   = 10 // KubeVirt's limit on interfaces only the agent knows
	maxAgentCommands     = api.MaxAgentCommands
	maxAgentUsers        = api.MaxAgentUsers
	maxAgentFileSystems  = api.MaxAgentFileSystems
	maxAgentDisksPerFS   = api.MaxAgentDisksPerFileSystem
	infoSourceDomain     = "domain"
	infoSourceGuestAgent = "guest-agent"
	// ReasonAgentConnected is the AgentConnected condition's reason.
	ReasonAgentConnected = "GuestAgentConnected"
)

// clean is s as at most n bytes of valid UTF-8 without control characters.
func clean(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = strings.TrimSuffix(truncate(s, n), "…")
	}
	return s
}

// reportedAgent is the launcher's agent report, within bounds; nil stays nil.
func reportedAgent(in *api.Agent) *api.Agent {
	if in == nil {
		return nil
	}
	out := &api.Agent{OS: cleanOS(in.OS), Hostname: clean(in.Hostname, maxAgentString)}
	for _, i := range in.Interfaces {
		if len(out.Interfaces) == maxAgentInterfaces {
			break
		}
		mac, err := net.ParseMAC(i.MAC)
		if err != nil || len(mac) != 6 {
			continue
		}
		ai := api.AgentInterface{MAC: mac.String()}
		if ifnamePattern.MatchString(i.Name) && i.Name != "." && i.Name != ".." {
			ai.Name = i.Name
		}
		for _, s := range i.IPs {
			if len(ai.IPs) == maxAgentIPs {
				break
			}
			if ip, err := netip.ParseAddr(s); err == nil && ip.Zone() == "" {
				ai.IPs = append(ai.IPs, ip.String())
			}
		}
		out.Interfaces = append(out.Interfaces, ai)
	}
	return out
}

func cleanOS(o v1.VirtualMachineInstanceGuestOSInfo) v1.VirtualMachineInstanceGuestOSInfo {
	c := func(s string) string { return clean(s, maxAgentString) }
	return v1.VirtualMachineInstanceGuestOSInfo{Name: c(o.Name), KernelRelease: c(o.KernelRelease), Version: c(o.Version),
		PrettyName: c(o.PrettyName), VersionID: c(o.VersionID), KernelVersion: c(o.KernelVersion), Machine: c(o.Machine), ID: c(o.ID)}
}

// cleanGuestInfo is a launcher's guestinfo answer within bounds.
func cleanGuestInfo(in v1.VirtualMachineInstanceGuestAgentInfo) v1.VirtualMachineInstanceGuestAgentInfo {
	s := func(v string) string { return clean(v, maxAgentString) }
	out := v1.VirtualMachineInstanceGuestAgentInfo{
		GuestAgentVersion: s(in.GuestAgentVersion), Hostname: s(in.Hostname), OS: cleanOS(in.OS), Timezone: s(in.Timezone),
		FSInfo: v1.VirtualMachineInstanceFileSystemInfo{Disks: []v1.VirtualMachineInstanceFileSystem{}},
	}
	if in.FSFreezeStatus == v1.FSFrozen {
		out.FSFreezeStatus = v1.FSFrozen
	}
	for i, c := range in.SupportedCommands {
		if i == maxAgentCommands {
			break
		}
		out.SupportedCommands = append(out.SupportedCommands, v1.GuestAgentCommandInfo{Name: s(c.Name), Enabled: c.Enabled})
	}
	for i, u := range in.UserList {
		if i == maxAgentUsers {
			break
		}
		out.UserList = append(out.UserList, v1.VirtualMachineInstanceGuestOSUser{UserName: s(u.UserName), Domain: s(u.Domain), LoginTime: max(u.LoginTime, 0)})
	}
	for i, fs := range in.FSInfo.Disks {
		if i == maxAgentFileSystems {
			break
		}
		f := v1.VirtualMachineInstanceFileSystem{DiskName: s(fs.DiskName), MountPoint: clean(fs.MountPoint, maxAgentPath),
			FileSystemType: s(fs.FileSystemType), UsedBytes: max(fs.UsedBytes, 0), TotalBytes: max(fs.TotalBytes, 0)}
		for j, d := range fs.Disk {
			if j == maxAgentDisksPerFS {
				break
			}
			f.Disk = append(f.Disk, v1.VirtualMachineInstanceFileSystemDisk{Serial: s(d.Serial), BusType: s(d.BusType)})
		}
		out.FSInfo.Disks = append(out.FSInfo.Disks, f)
	}
	return out
}

// setAgentStatus writes the agent's part of the status: the AgentConnected condition, the
// guest's OS and what the agent knows of the interfaces, merged as KubeVirt merges them.
func setAgentStatus(s *v1.VirtualMachineInstanceStatus, vmi *v1.VirtualMachineInstance, agent *api.Agent, now metav1.Time) {
	if agent == nil {
		s.RemoveCondition(v1.VirtualMachineInstanceAgentConnected)
		return
	}
	s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
		Reason: ReasonAgentConnected, Message: "the guest agent is connected"}, now)
	if agent.OS != (v1.VirtualMachineInstanceGuestOSInfo{}) {
		s.GuestOSInfo = agent.OS
	}
	s.Interfaces = mergeAgentInterfaces(vmi, s.Interfaces, agent.Interfaces)
}

// mergeAgentInterfaces adds the agent's view to the interfaces the domain reports (matched by
// MAC): the name in the guest, and addresses of a family the status has none of (the pod's
// address of a masquerade interface stays, the guest's link-local ones are left out). The
// agent's other interfaces (a VPN, a dummy) follow, at most maxGuestOnlyIfaces of them.
func mergeAgentInterfaces(vmi *v1.VirtualMachineInstance, status []v1.VirtualMachineInstanceNetworkInterface, agent []api.AgentInterface) []v1.VirtualMachineInstanceNetworkInterface {
	masquerade := map[string]bool{}
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		masquerade[i.Name] = i.Masquerade != nil
	}
	out := append([]v1.VirtualMachineInstanceNetworkInterface(nil), status...)
	guestOnly := 0
	for _, ai := range agent {
		idx := -1
		for i := range out {
			if strings.EqualFold(out[i].MAC, ai.MAC) && out[i].Name != "" {
				idx = i
				break
			}
		}
		if idx < 0 {
			if guestOnly == maxGuestOnlyIfaces {
				continue
			}
			guestOnly++
			gi := v1.VirtualMachineInstanceNetworkInterface{MAC: ai.MAC, InterfaceName: ai.Name, IPs: ai.IPs, InfoSource: infoSourceGuestAgent}
			if len(ai.IPs) > 0 {
				gi.IP = ai.IPs[0]
			}
			out = append(out, gi)
			continue
		}
		st := &out[idx]
		st.InterfaceName = ai.Name
		st.InfoSource = infoSourceDomain + ", " + infoSourceGuestAgent
		ips := ai.IPs
		if masquerade[st.Name] {
			ips = withoutLinkLocal(ips)
		}
		st4, st6 := byFamily(st.IPs)
		ga4, ga6 := byFamily(ips)
		if len(st4) == 0 || len(ga4) == 0 {
			st4 = ga4
		}
		if len(st6) == 0 || len(ga6) == 0 {
			st6 = ga6
		}
		st.IPs = append(append([]string(nil), st4...), st6...)
		st.IP = ""
		if len(st.IPs) > 0 {
			st.IP = st.IPs[0]
		}
	}
	return out
}

func byFamily(ips []string) (v4, v6 []string) {
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		switch {
		case err != nil:
		case ip.Is4():
			v4 = append(v4, s)
		default:
			v6 = append(v6, s)
		}
	}
	return v4, v6
}

func withoutLinkLocal(ips []string) []string {
	var out []string
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil && !ip.IsLinkLocalUnicast() {
			out = append(out, s)
		}
	}
	return out
}
