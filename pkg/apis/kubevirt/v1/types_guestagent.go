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
	GuestAgentVersion string `json:"guestAgentVersion,omitempty" protobuf:"bytes,1,opt,name=guestAgentVersion"`
	// SupportedCommands are the agent's commands.
	// +optional
	// +listType=atomic
	SupportedCommands []GuestAgentCommandInfo `json:"supportedCommands,omitempty" protobuf:"bytes,2,rep,name=supportedCommands"`
	// Hostname is the guest's host name.
	// +optional
	Hostname string `json:"hostname,omitempty" protobuf:"bytes,3,opt,name=hostname"`
	// OS is the guest's operating system.
	// +optional
	OS VirtualMachineInstanceGuestOSInfo `json:"os,omitempty" protobuf:"bytes,4,opt,name=os"`
	// Timezone is the guest's time zone: name, offset from UTC in seconds.
	// +optional
	Timezone string `json:"timezone,omitempty" protobuf:"bytes,5,opt,name=timezone"`
	// UserList are the users logged in.
	// +optional
	// +listType=atomic
	UserList []VirtualMachineInstanceGuestOSUser `json:"userList,omitempty" protobuf:"bytes,6,rep,name=userList"`
	// FSInfo are the guest's mounted file systems.
	// +optional
	FSInfo VirtualMachineInstanceFileSystemInfo `json:"fsInfo,omitempty" protobuf:"bytes,7,opt,name=fsInfo"`
	// FSFreezeStatus is "frozen" while a freeze is in effect.
	// +optional
	FSFreezeStatus string `json:"fsFreezeStatus,omitempty" protobuf:"bytes,8,opt,name=fsFreezeStatus"`
}

// GuestAgentCommandInfo is one command of the guest agent.
type GuestAgentCommandInfo struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,2,opt,name=enabled"`
}

// VirtualMachineInstanceGuestOSUserList lists the users logged in to a guest.
type VirtualMachineInstanceGuestOSUserList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []VirtualMachineInstanceGuestOSUser `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstanceGuestOSUser is a user logged in to a guest.
type VirtualMachineInstanceGuestOSUser struct {
	UserName string `json:"userName" protobuf:"bytes,1,opt,name=userName"`
	// +optional
	Domain string `json:"domain,omitempty" protobuf:"bytes,2,opt,name=domain"`
	// LoginTime is the earliest login, in seconds since the epoch.
	// +optional
	LoginTime float64 `json:"loginTime,omitempty" protobuf:"fixed64,3,opt,name=loginTime"`
}

// VirtualMachineInstanceFileSystemInfo are a guest's file systems.
type VirtualMachineInstanceFileSystemInfo struct {
	// +listType=atomic
	Disks []VirtualMachineInstanceFileSystem `json:"disks" protobuf:"bytes,1,rep,name=disks"`
}

// VirtualMachineInstanceFileSystemList lists a guest's file systems.
type VirtualMachineInstanceFileSystemList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []VirtualMachineInstanceFileSystem `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstanceFileSystemDisk is a disk under a guest file system.
type VirtualMachineInstanceFileSystemDisk struct {
	// +optional
	Serial  string `json:"serial,omitempty" protobuf:"bytes,1,opt,name=serial"`
	BusType string `json:"busType" protobuf:"bytes,2,opt,name=busType"`
}

// VirtualMachineInstanceFileSystem is a mounted guest file system.
type VirtualMachineInstanceFileSystem struct {
	DiskName       string `json:"diskName" protobuf:"bytes,1,opt,name=diskName"`
	MountPoint     string `json:"mountPoint" protobuf:"bytes,2,opt,name=mountPoint"`
	FileSystemType string `json:"fileSystemType" protobuf:"bytes,3,opt,name=fileSystemType"`
	UsedBytes      int    `json:"usedBytes" protobuf:"varint,4,opt,name=usedBytes,casttype=int"`
	TotalBytes     int    `json:"totalBytes" protobuf:"varint,5,opt,name=totalBytes,casttype=int"`
	// +optional
	// +listType=atomic
	Disk []VirtualMachineInstanceFileSystemDisk `json:"disk,omitempty" protobuf:"bytes,6,rep,name=disk"`
}

// FreezeUnfreezeTimeout is the body of freeze: the guest's file systems are thawed after
// UnfreezeTimeout if no unfreeze came first.
type FreezeUnfreezeTimeout struct {
	// +optional
	UnfreezeTimeout *metav1.Duration `json:"unfreezeTimeout" protobuf:"bytes,1,opt,name=unfreezeTimeout"`
}

// FSFrozen is status.fsFreezeStatus while a freeze is in effect.
const FSFrozen = "frozen"
