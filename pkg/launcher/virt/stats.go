package virt

// DomainStats is what libvirt reports of a running domain, in libvirt's units. A nil pointer
// is a figure libvirt did not report (a balloon figure without a balloon driver, say).
type DomainStats struct {
	// CPUTime is the time QEMU's threads spent on host CPUs, in nanoseconds.
	CPUTime *uint64
	VCPUs   []VCPUStats
	// CurrentKiB is the guest's current memory, MaximumKiB the most it may have.
	CurrentKiB, MaximumKiB *uint64
	// RSSKiB is QEMU's resident set; AvailableKiB what the guest's balloon driver reports.
	RSSKiB, AvailableKiB *uint64
	// Net is per tap device, Block per target device (vda, sda).
	Net   []NetStats
	Block []BlockStats
}

// VCPUStats is one vCPU's: its state (running, blocked, offline) and the time it ran, in
// nanoseconds.
type VCPUStats struct {
	ID    uint32
	State string
	Time  uint64
}

// NetStats is one interface's traffic as libvirt reports it: from the guest's side.
type NetStats struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// BlockStats is one disk's traffic: bytes, requests and the time spent on them (ns).
type BlockStats struct {
	Name                                 string
	ReadBytes, ReadRequests, ReadTime    uint64
	WriteBytes, WriteRequests, WriteTime uint64
	FlushRequests                        uint64
}
