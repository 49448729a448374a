// Package virt is the launcher's narrow view of libvirt: the few calls it makes on its one
// domain and the lifecycle events it needs. The launcher's logic is tested against a fake;
// the libvirt implementation (Connect) against a real libvirtd.
package virt

import (
	"errors"
	"os"
)

// ErrNoDomain is returned for a domain libvirt does not know.
var ErrNoDomain = errors.New("no such domain")

// State is a domain's state.
type State string

const (
	StateRunning      State = "Running"
	StatePaused       State = "Paused"
	StateShuttingDown State = "ShuttingDown"
	StateShutoff      State = "Shutoff"
	StateCrashed      State = "Crashed"
	StateOther        State = "Other"
)

// DomainState is a domain's state and libvirt's reason for it (for Shutoff: Shutdown,
// Destroyed, Crashed, Failed, Migrated, ...; for Paused: User, Migration (stopped for the
// switch-over, or an incoming guest not yet running), PostCopy, ...).
type DomainState struct {
	State  State
	Reason string
}

// EventKind is the kind of a lifecycle event.
type EventKind string

const (
	EventStarted   EventKind = "Started"
	EventSuspended EventKind = "Suspended"
	EventResumed   EventKind = "Resumed"
	EventShutdown  EventKind = "Shutdown" // the guest began powering off
	EventStopped   EventKind = "Stopped"
	EventCrashed   EventKind = "Crashed"
	EventOther     EventKind = "Other"
	// EventAgent: the guest agent connected or disconnected (Detail says which).
	EventAgent EventKind = "Agent"
)

// Event is a lifecycle event of a domain. Detail is libvirt's, for Stopped: Shutdown,
// Destroyed, Crashed, Failed, ...
type Event struct {
	Domain string
	Kind   EventKind
	Detail string
}

// Hypervisor is what the launcher needs from libvirt.
type Hypervisor interface {
	// Define defines (or redefines) a domain from its XML.
	Define(xml string) error
	// StartPaused starts a defined domain with its vCPUs stopped.
	StartPaused(name string) error
	Resume(name string) error
	Suspend(name string) error
	// Reboot asks the guest to reboot through ACPI.
	Reboot(name string) error
	// Reset resets the guest at once, as the reset button does: no guest cooperation.
	Reset(name string) error
	// Shutdown presses the guest's ACPI power button.
	Shutdown(name string) error
	// AttachDevice adds the device of xml to the running guest; DetachDevice removes it.
	AttachDevice(name, xml string) error
	DetachDevice(name, xml string) error
	// AddFDSet gives QEMU files, as fd set id (QMP add-fd): a disk whose source is
	// /dev/fdset/<id> then uses them, and QEMU opens nothing by a path.
	AddFDSet(name string, id int, files []*os.File) error
	// RemoveFDSet drops fd set id; QEMU closes its files once no disk uses them.
	RemoveFDSet(name string, id int) error
	// MemoryDump writes the guest's memory to path as an ELF core (QEMU's dump-guest-memory),
	// and returns when it is written.
	MemoryDump(name, path string) error
	// Destroy stops QEMU at once.
	Destroy(name string) error
	// Undefine removes a stopped domain's definition.
	Undefine(name string) error
	// State is the domain's state; ErrNoDomain when libvirt does not know it.
	State(name string) (DomainState, error)
	// Stats reads the domain's statistics without waiting for a QEMU monitor that is busy
	// (the figures that need it are left out then): a scrape never slows the guest.
	Stats(name string) (DomainStats, error)
	// Events delivers lifecycle events of all domains until Close.
	Events() <-chan Event
	// Closed is closed when the connection to libvirtd is lost or closed.
	Closed() <-chan struct{}
	Close() error

	// Migrate live-migrates the domain peer to peer and returns when the migration ended:
	// nil once the guest runs on the target.
	Migrate(name string, p MigrateParams) error
	// JobStats are the statistics of the domain's job under way (a migration).
	JobStats(name string) (JobStats, error)
	// AbortJob cancels the domain's job under way.
	AbortJob(name string) error
	// StartPostCopy switches a migration started with PostCopy to post-copy.
	StartPostCopy(name string) error
}

// MigrateParams say where and how a domain migrates.
type MigrateParams struct {
	// DestURI is the target libvirtd's URI, as the source libvirtd dials it.
	DestURI string
	// MemoryURI is where QEMU sends its migration stream (unix:///path).
	MemoryURI string
	// DisksURI is where QEMU copies the disks in CopyDisks (unix:///path); CopyDisks are
	// target device names (vda, ...): the disks that are not shared.
	DisksURI  string
	CopyDisks []string
	// BandwidthMiB limits the throughput (MiB/s); 0 is unlimited.
	BandwidthMiB uint64
	AutoConverge bool
	// PostCopy allows a switch to post-copy (StartPostCopy).
	PostCopy bool
}

// JobStats are a migration's statistics.
type JobStats struct {
	// Active: a job is under way.
	Active bool
	// Data is memory plus copied disks, in bytes.
	DataTotal, DataProcessed, DataRemaining uint64
	// MemoryBps is the memory transfer rate; DirtyRate the guest's dirtying rate, in
	// bytes per second.
	MemoryBps, DirtyRate uint64
}
