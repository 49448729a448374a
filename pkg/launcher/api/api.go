// Package api is the protocol between virt-handler and virt-launcher: JSON over HTTP on the
// unix socket <socket dir>/launcher.sock, versioned by path (/v1/...). The launcher serves it
// (pkg/launcher); the handler uses Client. Every call has a deadline; the event stream is a
// long poll, so a closed connection never leaves half a stream behind.
package api

import (
	"time"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Version is the protocol version; it is the first path element of every call.
const Version = "v1"

// SocketName is the command socket's name in an instance's socket directory.
const SocketName = "launcher.sock"

// ConsoleSocketName is where the launcher relays the guest's serial console: one client at
// a time, a new one replaces the old. The launcher holds QEMU's own serial socket itself,
// from before the guest runs, so that no output is lost.
const ConsoleSocketName = "console.sock"

// VNCSocketName is QEMU's VNC socket in the socket directory.
const VNCSocketName = "vnc.sock"

// Paths of the calls.
const (
	PathHealthz    = "/" + Version + "/healthz"    // GET: Health
	PathSync       = "/" + Version + "/sync"       // PUT VirtualMachineInstance: State
	PathState      = "/" + Version + "/state"      // GET: State
	PathEvents     = "/" + Version + "/events"     // GET ?after=SEQ&wait=DURATION: Events
	PathPause      = "/" + Version + "/pause"      // POST: State
	PathUnpause    = "/" + Version + "/unpause"    // POST: State
	PathSoftReboot = "/" + Version + "/softreboot" // POST: State
	PathReset      = "/" + Version + "/reset"      // POST: State
	PathShutdown   = "/" + Version + "/shutdown"   // POST ShutdownRequest: State
	PathGuestInfo  = "/" + Version + "/guestinfo"  // GET: v1.VirtualMachineInstanceGuestAgentInfo
	PathFreeze     = "/" + Version + "/freeze"     // POST FreezeRequest: State
	PathUnfreeze   = "/" + Version + "/unfreeze"   // POST: State

	// PathMigrationTarget makes the launcher of a migration's target pod ready to receive
	// the guest: its volumes and network as for a start, no domain (libvirt makes it when the
	// migration arrives).
	PathMigrationTarget = "/" + Version + "/migration/target" // PUT MigrationTargetRequest: State
	// PathMigrate starts the migration of the guest to the target behind the migration
	// socket; it returns at once, the progress follows in State.Migration.
	PathMigrate = "/" + Version + "/migration/start" // POST MigrateRequest: State
	// PathMigrationAbort cancels the migration under way; the guest stays.
	PathMigrationAbort = "/" + Version + "/migration/abort" // POST AbortRequest: State

	PathStats = "/" + Version + "/stats" // GET: Stats (409 while no guest runs)
)

// Health answers PathHealthz.
type Health struct {
	Version string `json:"version"`
	// UID of the instance the launcher was started for.
	UID string `json:"uid"`
}

// SyncRequest is the body of PathSync.
type SyncRequest struct {
	// VMI is the instance as the API has it (the launcher reads the Secrets its cloud-init
	// names from its pod's volumes).
	VMI *v1.VirtualMachineInstance `json:"vmi"`
	// QEMUCapabilities is libvirt's capabilities file of QEMU as virt-handler's init container
	// wrote it on this node; the launcher seeds libvirt's cache with it before the first start
	// (pkg/launcher/libvirtd/capabilities.go). Empty: libvirt probes QEMU itself.
	QEMUCapabilities string `json:"qemuCapabilities,omitempty"`
}

// ShutdownRequest is the body of PathShutdown.
type ShutdownRequest struct {
	// GracePeriodSeconds is how long the guest gets after the ACPI power button before it is
	// destroyed; the instance's terminationGracePeriodSeconds when nil.
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
}

// FreezeRequest is the body of PathFreeze.
type FreezeRequest struct {
	// UnfreezeTimeoutSeconds thaws the guest's file systems after this long if no unfreeze
	// came first; 0 never does.
	UnfreezeTimeoutSeconds int64 `json:"unfreezeTimeoutSeconds"`
}

// Phase is the guest's state as the launcher sees it.
type Phase string

const (
	// PhaseNone: no domain yet (no Sync so far).
	PhaseNone Phase = ""
	// PhaseStarting: being defined and started.
	PhaseStarting Phase = "Starting"
	// PhaseIncoming: a migration target, ready for the guest to arrive; Running once it has.
	PhaseIncoming Phase = "Incoming"
	PhaseRunning  Phase = "Running"
	PhasePaused   Phase = "Paused"
	// PhaseShuttingDown: the guest was asked to power off and has not yet.
	PhaseShuttingDown Phase = "ShuttingDown"
	// PhaseSucceeded: the guest powered off (or was stopped on request).
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: the guest crashed, QEMU died, or it never started.
	PhaseFailed Phase = "Failed"
)

// Final says whether a phase is an end: the launcher exits shortly after.
func (p Phase) Final() bool { return p == PhaseSucceeded || p == PhaseFailed }

// GuestRuns says whether a guest runs in the phase (paused or shutting down included): it
// has statistics, and the instance is Running.
func (p Phase) GuestRuns() bool {
	return p == PhaseRunning || p == PhasePaused || p == PhaseShuttingDown
}

// State is the launcher's view of its guest.
type State struct {
	// UID of the instance.
	UID string `json:"uid"`
	// Domain is the libvirt domain name.
	Domain string `json:"domain,omitempty"`
	Phase  Phase  `json:"phase"`
	// Reason is a CamelCase reason for Phase (for example GuestShutdown, QEMUCrashed).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Interfaces are the guest's network interfaces.
	Interfaces []Interface `json:"interfaces,omitempty"`
	// Agent is what the guest agent reports; nil while none is connected.
	Agent *Agent `json:"agent,omitempty"`
	// FSFrozen says a freeze of the guest's file systems is in effect.
	FSFrozen bool `json:"fsFrozen,omitempty"`
	// Hotplugged are the volumes hotplugged into the running guest (docs/hotplug.md).
	Hotplugged []HotpluggedVolume `json:"hotplugged,omitempty"`
	// ReadOnlyCopies: the launcher takes a writable disk's handover with its read-only copy
	// (Handover.ReadOnlyCopy). Launchers before it take exactly one descriptor, so a
	// handler hands them none.
	ReadOnlyCopies bool `json:"readOnlyCopies,omitempty"`
	// MemoryDumps are the memory dumps handed over, one per volume: the latest.
	MemoryDumps []MemoryDump `json:"memoryDumps,omitempty"`
	// Migration is the latest migration of the guest, out of this launcher (source) or into
	// it (target); nil when there was none.
	Migration *Migration `json:"migration,omitempty"`
	// Seq is the sequence number of the latest event.
	Seq uint64 `json:"seq"`
}

// HotpluggedVolume is a volume the guest has as a disk since it was hotplugged.
type HotpluggedVolume struct {
	// Name is the instance's volume.
	Name string `json:"name"`
	// Target is the disk's name in the domain (sda, sdb, ...).
	Target string `json:"target"`
}

// MemoryDump is a dump of the guest's memory to the file handed over for a memory dump
// volume (docs/hotplug.md).
type MemoryDump struct {
	// Volume is the instance's memory dump volume.
	Volume string `json:"volume"`
	// FileName is the dump's file, as the handover named it.
	FileName string `json:"fileName"`
	// Done: the dump ended; Failed: it failed, Message says why.
	Done    bool   `json:"done,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
	Message string `json:"message,omitempty"`
}

// Interface is a guest network interface.
type Interface struct {
	Name string `json:"name"`
	MAC  string `json:"mac"`
	// IP is the address the instance is reached at: the pod's address for masquerade.
	IP string `json:"ip,omitempty"`
	// GuestIP is the guest's own (private) address.
	GuestIP string `json:"guestIP,omitempty"`
	// PodInterfaceName is the pod interface the guest's traffic leaves through.
	PodInterfaceName string `json:"podInterfaceName,omitempty"`
}

// Bounds on the guest agent's lists in answers, which the guest fills: the launcher keeps at
// most these, the handler holds every launcher to them again.
const (
	MaxAgentInterfaces         = 32
	MaxAgentIPs                = 16
	MaxAgentCommands           = 512
	MaxAgentUsers              = 256
	MaxAgentFileSystems        = 256
	MaxAgentDisksPerFileSystem = 16
)

// Agent is what a connected guest agent reports, kept fresh by the launcher.
type Agent struct {
	OS         v1.VirtualMachineInstanceGuestOSInfo `json:"os"`
	Hostname   string                               `json:"hostname,omitempty"`
	Interfaces []AgentInterface                     `json:"interfaces,omitempty"`
}

// AgentInterface is a guest network interface as the agent sees it.
type AgentInterface struct {
	// Name is the interface's name in the guest (eth0, enp1s0).
	Name string   `json:"name"`
	MAC  string   `json:"mac"`
	IPs  []string `json:"ips,omitempty"`
}

// Event is one change of the guest's state.
type Event struct {
	Seq   uint64 `json:"seq"`
	State State  `json:"state"`
}

// Events answers PathEvents: the events after the requested sequence number (possibly none
// when the wait ran out; only the latest few are kept). State is always the current one.
type Events struct {
	Events []Event `json:"events"`
	State  State   `json:"state"`
}

// Stats answers PathStats: the guest's statistics from libvirt, named as the instance names
// its devices. Counters only grow while the guest runs; a nil figure was not reported.
type Stats struct {
	// UID of the instance.
	UID string `json:"uid"`
	// CPUTimeNanoseconds is the host CPU time of QEMU's threads.
	CPUTimeNanoseconds *uint64     `json:"cpuTimeNs,omitempty"`
	VCPUs              []VCPUStats `json:"vcpus,omitempty"`
	Memory             MemoryStats `json:"memory"`
	// Interfaces are named by spec.domain.devices.interfaces, Disks by .disks.
	Interfaces []InterfaceStats `json:"interfaces,omitempty"`
	Disks      []DiskStats      `json:"disks,omitempty"`
}

// VCPUStats is one vCPU: its index, state (running, blocked, offline) and time run.
type VCPUStats struct {
	ID              uint32 `json:"id"`
	State           string `json:"state"`
	TimeNanoseconds uint64 `json:"timeNs"`
}

// MemoryStats are in bytes.
type MemoryStats struct {
	// ResidentBytes is QEMU's resident set on the host.
	ResidentBytes *uint64 `json:"residentBytes,omitempty"`
	// AvailableBytes is what the guest reports usable through a balloon driver.
	AvailableBytes *uint64 `json:"availableBytes,omitempty"`
	// DomainBytes is the memory the guest was given.
	DomainBytes *uint64 `json:"domainBytes,omitempty"`
}

// InterfaceStats is one interface's traffic, as the guest sees it.
type InterfaceStats struct {
	Name      string `json:"name"`
	RxBytes   uint64 `json:"rxBytes"`
	RxPackets uint64 `json:"rxPackets"`
	RxErrors  uint64 `json:"rxErrors"`
	RxDropped uint64 `json:"rxDropped"`
	TxBytes   uint64 `json:"txBytes"`
	TxPackets uint64 `json:"txPackets"`
	TxErrors  uint64 `json:"txErrors"`
	TxDropped uint64 `json:"txDropped"`
}

// DiskStats is one disk's traffic; times in nanoseconds.
type DiskStats struct {
	Name                 string `json:"name"`
	ReadBytes            uint64 `json:"readBytes"`
	ReadRequests         uint64 `json:"readRequests"`
	ReadTimeNanoseconds  uint64 `json:"readTimeNs"`
	WriteBytes           uint64 `json:"writeBytes"`
	WriteRequests        uint64 `json:"writeRequests"`
	WriteTimeNanoseconds uint64 `json:"writeTimeNs"`
	FlushRequests        uint64 `json:"flushRequests"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
}

// MigrationTargetRequest is the body of PathMigrationTarget.
type MigrationTargetRequest struct {
	VMI *v1.VirtualMachineInstance `json:"vmi"`
	// UID is the migration's.
	UID string `json:"uid"`
	// QEMUCapabilities: as SyncRequest's; the incoming domain needs them as a start does.
	QEMUCapabilities string `json:"qemuCapabilities,omitempty"`
}

// MigrateRequest is the body of PathMigrate.
type MigrateRequest struct {
	// UID is the migration's (the VirtualMachineInstanceMigration's): it names the migration
	// in the launcher's state and on the tunnel.
	UID string `json:"uid"`
	// Options bound the migration.
	Options MigrationOptions `json:"options"`
}

// MigrationOptions are the cluster configuration's migration settings, as they apply to one
// migration.
type MigrationOptions struct {
	// BandwidthMiB limits the migration's throughput (MiB/s); 0 is unlimited.
	BandwidthMiB uint64 `json:"bandwidthMiB,omitempty"`
	// ProgressTimeoutSeconds aborts a migration whose remaining data has not shrunk for
	// that long.
	ProgressTimeoutSeconds int64 `json:"progressTimeoutSeconds,omitempty"`
	// CompletionTimeoutPerGiBSeconds aborts (or, with AllowPostCopy, switches to post-copy)
	// a migration that takes longer than this per GiB of memory and copied disk.
	CompletionTimeoutPerGiBSeconds int64 `json:"completionTimeoutPerGiBSeconds,omitempty"`
	// AllowAutoConverge lets QEMU throttle the guest's vCPUs to converge.
	AllowAutoConverge bool `json:"allowAutoConverge,omitempty"`
	// AllowPostCopy lets the migration switch to post-copy when it does not complete in time.
	AllowPostCopy bool `json:"allowPostCopy,omitempty"`
}

// AbortRequest is the body of PathMigrationAbort.
type AbortRequest struct {
	UID string `json:"uid"`
}

// MigrationMode is how memory moves.
type MigrationMode string

const (
	MigrationPreCopy  MigrationMode = "PreCopy"
	MigrationPostCopy MigrationMode = "PostCopy"
)

// AbortStatus is the state of a cancel request.
type AbortStatus string

const (
	AbortAborting  AbortStatus = "Aborting"
	AbortSucceeded AbortStatus = "Succeeded"
	AbortFailed    AbortStatus = "Failed"
)

// Migration is a migration as one of its launchers sees it.
type Migration struct {
	UID string `json:"uid"`
	// Role is Source or Target.
	Role      MigrationRole `json:"role"`
	StartedAt *time.Time    `json:"startedAt,omitempty"`
	EndedAt   *time.Time    `json:"endedAt,omitempty"`
	Completed bool          `json:"completed,omitempty"`
	Failed    bool          `json:"failed,omitempty"`
	// Reason is why it failed: CamelCase.
	Reason      string        `json:"reason,omitempty"`
	Message     string        `json:"message,omitempty"`
	Mode        MigrationMode `json:"mode,omitempty"`
	AbortStatus AbortStatus   `json:"abortStatus,omitempty"`
	// Progress (source only), from libvirt's job statistics.
	DataTotalBytes     uint64 `json:"dataTotalBytes,omitempty"`
	DataProcessedBytes uint64 `json:"dataProcessedBytes,omitempty"`
	DataRemainingBytes uint64 `json:"dataRemainingBytes,omitempty"`
	// MemoryBytesPerSecond is the memory transfer rate; DirtyRateBytesPerSecond the rate at
	// which the guest dirties memory.
	MemoryBytesPerSecond    uint64 `json:"memoryBytesPerSecond,omitempty"`
	DirtyRateBytesPerSecond uint64 `json:"dirtyRateBytesPerSecond,omitempty"`
}

// MigrationRole says which end of a migration a launcher is.
type MigrationRole string

const (
	MigrationSource MigrationRole = "Source"
	MigrationTarget MigrationRole = "Target"
)
