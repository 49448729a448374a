package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The guest agent's answers, as KubeVirt's subresources.kubevirt.io serves them
// (guestosinfo, userlist, filesystemlist) and the body of freeze. They are not stored: virt-api
// forwards what the instance's node agent read from the launcher, after the node agent
// checked and bounded it.

// VirtualMachineInstanceGuestAgentInfo is what the guest agent reports of its guest.
type VirtualMachineInstanceGuestAgentInfo struct {
	metav1.TypeMeta `json:",inline"`
	// GuestAgentVersion is the agent's version.
	// +optional
	GuestAgentVersion string `json:"guestAgentVersion,omitempty"`
	// SupportedCommands are the agent's commands.
	// +optional
	// +listType=atomic
	SupportedCommands []GuestAgentCommandInfo `json:"supportedCommands,omitempty"`
	// Hostname is the guest's host name.
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// OS is the guest's operating system.
	// +optional
	OS VirtualMachineInstanceGuestOSInfo `json:"os,omitempty"`
	// Timezone is the guest's time zone: name, offset from UTC in seconds.
	// +optional
	Timezone string `json:"timezone,omitempty"`
	// UserList are the users logged in.
	// +optional
	// +listType=atomic
	UserList []VirtualMachineInstanceGuestOSUser `json:"userList,omitempty"`
	// FSInfo are the guest's mounted file systems.
	// +optional
	FSInfo VirtualMachineInstanceFileSystemInfo `json:"fsInfo,omitempty"`
	// FSFreezeStatus is "frozen" while a freeze is in effect.
	// +optional
	FSFreezeStatus string `json:"fsFreezeStatus,omitempty"`
}

// GuestAgentCommandInfo is one command of the guest agent.
type GuestAgentCommandInfo struct {
	Name string `json:"name"`
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// VirtualMachineInstanceGuestOSUserList lists the users logged in to a guest.
type VirtualMachineInstanceGuestOSUserList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstanceGuestOSUser `json:"items"`
}

// VirtualMachineInstanceGuestOSUser is a user logged in to a guest.
type VirtualMachineInstanceGuestOSUser struct {
	UserName string `json:"userName"`
	// +optional
	Domain string `json:"domain,omitempty"`
	// LoginTime is the earliest login, in seconds since the epoch.
	// +optional
	LoginTime float64 `json:"loginTime,omitempty"`
}

// VirtualMachineInstanceFileSystemInfo are a guest's file systems.
type VirtualMachineInstanceFileSystemInfo struct {
	// +listType=atomic
	Disks []VirtualMachineInstanceFileSystem `json:"disks"`
}

// VirtualMachineInstanceFileSystemList lists a guest's file systems.
type VirtualMachineInstanceFileSystemList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstanceFileSystem `json:"items"`
}

// VirtualMachineInstanceFileSystemDisk is a disk under a guest file system.
type VirtualMachineInstanceFileSystemDisk struct {
	// +optional
	Serial  string `json:"serial,omitempty"`
	BusType string `json:"busType"`
}

// VirtualMachineInstanceFileSystem is a mounted guest file system.
type VirtualMachineInstanceFileSystem struct {
	DiskName       string `json:"diskName"`
	MountPoint     string `json:"mountPoint"`
	FileSystemType string `json:"fileSystemType"`
	UsedBytes      int    `json:"usedBytes"`
	TotalBytes     int    `json:"totalBytes"`
	// +optional
	// +listType=atomic
	Disk []VirtualMachineInstanceFileSystemDisk `json:"disk,omitempty"`
}

// FreezeUnfreezeTimeout is the body of freeze: the guest's file systems are thawed after
// UnfreezeTimeout if no unfreeze came first.
type FreezeUnfreezeTimeout struct {
	// +optional
	UnfreezeTimeout *metav1.Duration `json:"unfreezeTimeout"`
}

// FSFrozen is status.fsFreezeStatus while a freeze is in effect.
const FSFrozen = "frozen"
