package virt

import (
	"encoding/json"
	"fmt"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// GuestAgent is what the launcher asks of the guest agent (qemu-guest-agent), always through
// libvirt's own calls: libvirt owns the agent's channel socket, and nothing else opens it.
type GuestAgent interface {
	// AgentConnected says whether the agent of the domain is connected to its channel.
	AgentConnected(name string) (bool, error)
	// GuestInfo is what the agent reports of the guest.
	GuestInfo(name string) (GuestInfo, error)
	// AgentInterfaces are the guest's network interfaces as the agent sees them.
	AgentInterfaces(name string) ([]AgentInterface, error)
	// FSFreeze freezes the guest's file systems; FSThaw thaws them.
	FSFreeze(name string) error
	FSThaw(name string) error
}

// GuestInfo is the guest agent's report.
type GuestInfo struct {
	AgentVersion string
	Commands     []AgentCommand
	Hostname     string
	// Timezone is "name, offset in seconds", as KubeVirt reports it.
	Timezone    string
	OS          OSInfo
	Users       []User
	FileSystems []FileSystem
}

// AgentCommand is a command the agent offers.
type AgentCommand struct {
	Name    string
	Enabled bool
}

// OSInfo is the guest's operating system (os-release and uname).
type OSInfo struct {
	ID, Name, PrettyName, Version, VersionID, KernelRelease, KernelVersion, Machine string
}

// User is a user logged in to the guest; LoginTime is in seconds since the epoch.
type User struct {
	Name, Domain string
	LoginTime    float64
}

// FileSystem is a mounted guest file system and the domain disks (by target name) under it.
type FileSystem struct {
	Name, MountPoint, Type string
	UsedBytes, TotalBytes  uint64
	Disks                  []FileSystemDisk
}

// FileSystemDisk is a disk under a guest file system: Target is the domain's name for it
// (vda, sda), Serial the disk's serial number.
type FileSystemDisk struct {
	Target, Serial string
}

// AgentInterface is a guest network interface: its name in the guest, MAC and addresses.
type AgentInterface struct {
	Name string
	MAC  string
	IPs  []string
}

// agentTimeout bounds each agent call: an agent that hangs must not hold the launcher.
const agentTimeout = libvirt.DomainQemuAgentCommandTimeout(5)

func (c *Conn) AgentConnected(name string) (bool, error) {
	connected := false
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		desc, err := d.GetXMLDesc(0)
		if err != nil {
			return err
		}
		var dom libvirtxml.Domain
		if err := dom.Unmarshal(desc); err != nil {
			return err
		}
		if dom.Devices == nil {
			return nil
		}
		for _, ch := range dom.Devices.Channels {
			if t := ch.Target; t != nil && t.VirtIO != nil && t.VirtIO.Name == "org.qemu.guest_agent.0" {
				connected = t.VirtIO.State == "connected"
			}
		}
		return nil
	})
	return connected, err
}

func (c *Conn) GuestInfo(name string) (GuestInfo, error) {
	var info GuestInfo
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		gi, err := d.GetGuestInfo(libvirt.DOMAIN_GUEST_INFO_USERS|libvirt.DOMAIN_GUEST_INFO_OS|libvirt.DOMAIN_GUEST_INFO_TIMEZONE|
			libvirt.DOMAIN_GUEST_INFO_HOSTNAME|libvirt.DOMAIN_GUEST_INFO_FILESYSTEM, 0)
		if err != nil {
			return err
		}
		info = guestInfo(gi)
		// The agent's version and commands are not among libvirt's typed guest information.
		out, err := d.QemuAgentCommand(`{"execute":"guest-info"}`, agentTimeout, 0)
		if err != nil {
			return err
		}
		var reply struct {
			Return struct {
				Version  string `json:"version"`
				Commands []struct {
					Name    string `json:"name"`
					Enabled bool   `json:"enabled"`
				} `json:"supported_commands"`
			} `json:"return"`
		}
		if err := json.Unmarshal([]byte(out), &reply); err != nil {
			return fmt.Errorf("guest-info: %w", err)
		}
		info.AgentVersion = reply.Return.Version
		for _, cmd := range reply.Return.Commands {
			info.Commands = append(info.Commands, AgentCommand{Name: cmd.Name, Enabled: cmd.Enabled})
		}
		return nil
	})
	return info, err
}

func guestInfo(gi *libvirt.DomainGuestInfo) GuestInfo {
	var info GuestInfo
	if gi.HostnameSet {
		info.Hostname = gi.Hostname
	}
	if os := gi.OS; os != nil {
		info.OS = OSInfo{ID: os.ID, Name: os.Name, PrettyName: os.PrettyName, Version: os.Version, VersionID: os.VersionID,
			KernelRelease: os.KernelRelease, KernelVersion: os.KernelVersion, Machine: os.Machine}
	}
	if tz := gi.TimeZone; tz != nil {
		info.Timezone = fmt.Sprintf("%s, %d", tz.Name, tz.Offset)
	}
	for _, u := range gi.Users {
		info.Users = append(info.Users, User{Name: u.Name, Domain: u.Domain, LoginTime: float64(u.LoginTime) / 1000})
	}
	for _, fs := range gi.FileSystems {
		f := FileSystem{Name: fs.Name, MountPoint: fs.MountPoint, Type: fs.FSType}
		if fs.UsedBytesSet {
			f.UsedBytes = fs.UsedBytes
		}
		if fs.TotalBytesSet {
			f.TotalBytes = fs.TotalBytes
		}
		for _, disk := range fs.Disks {
			f.Disks = append(f.Disks, FileSystemDisk{Target: disk.Alias, Serial: disk.Serial})
		}
		info.FileSystems = append(info.FileSystems, f)
	}
	return info
}

func (c *Conn) AgentInterfaces(name string) ([]AgentInterface, error) {
	var out []AgentInterface
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		ifaces, err := d.ListAllInterfaceAddresses(libvirt.DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT)
		if err != nil {
			return err
		}
		for _, i := range ifaces {
			ai := AgentInterface{Name: i.Name, MAC: i.Hwaddr}
			for _, a := range i.Addrs {
				ai.IPs = append(ai.IPs, a.Addr)
			}
			out = append(out, ai)
		}
		return nil
	})
	return out, err
}

func (c *Conn) FSFreeze(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.FSFreeze(nil, 0) })
}

func (c *Conn) FSThaw(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.FSThaw(nil, 0) })
}

var _ GuestAgent = (*Conn)(nil)
