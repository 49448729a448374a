package launcher

import (
	"fmt"
	"os"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// Memory dumps (docs/hotplug.md): virt-handler hands over the open descriptor of a dump file
// on a memory dump volume's claim, as for a hotplugged disk, and syncs the instance whose
// spec names the volume; the launcher has libvirt write the guest's memory to
// /proc/<launcher PID>/fd/<n> and reports the dump done (or failed) in its state. Each
// handover is one dump: a new one replaces the record of the last.

// memoryDump is one dump: the descriptor until it ended, and what the state reports of it.
type memoryDump struct {
	file    *os.File
	started bool
	state   api.MemoryDump
}

// takeMemoryDump keeps the descriptor of a dump file handed over for volume; a dump of the
// volume not started yet gives way to it.
func (l *Launcher) takeMemoryDump(volume, fileName string, f *os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.dumps[volume]; old != nil && !old.started {
		old.file.Close()
	}
	if l.dumps == nil {
		l.dumps = map[string]*memoryDump{}
	}
	l.dumps[volume] = &memoryDump{file: f, state: api.MemoryDump{Volume: volume, FileName: fileName}}
}

// syncMemoryDumps starts the dumps handed over for the memory dump volumes of vmi's spec, and
// forgets those of volumes the spec dropped once they ended. The caller holds startMu.
func (l *Launcher) syncMemoryDumps(vmi *v1.VirtualMachineInstance) {
	inSpec := map[string]bool{}
	for _, v := range vmi.Spec.Volumes {
		if v.MemoryDump != nil {
			inSpec[v.Name] = true
		}
	}
	l.mu.Lock()
	name, running := l.state.Domain, l.state.Phase == api.PhaseRunning || l.state.Phase == api.PhasePaused
	for volume, d := range l.dumps {
		switch {
		case !inSpec[volume] && !d.started:
			d.file.Close()
			delete(l.dumps, volume)
		case !inSpec[volume] && d.state.Done:
			delete(l.dumps, volume)
		case inSpec[volume] && !d.started && running && name != "":
			d.started = true
			go l.dumpMemory(name, d)
		}
	}
	l.mu.Unlock()
	l.publishMemoryDumps()
}

// dumpMemory writes the guest's memory to d's file, then reports how it went.
func (l *Launcher) dumpMemory(domainName string, d *memoryDump) {
	klog.InfoS("dumping the guest's memory", "volume", d.state.Volume, "file", d.state.FileName)
	err := l.hv.MemoryDump(domainName, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), d.file.Fd()))
	d.file.Close()
	l.mu.Lock()
	d.state.Done = true
	if err != nil {
		d.state.Failed, d.state.Message = true, err.Error()
	}
	l.mu.Unlock()
	klog.InfoS("memory dump ended", "volume", d.state.Volume, "err", err)
	l.publishMemoryDumps()
}

// publishMemoryDumps puts the dumps under way or ended into the state, by volume.
func (l *Launcher) publishMemoryDumps() {
	l.update(func(s *api.State) {
		s.MemoryDumps = nil
		for _, volume := range sortedKeys(l.dumps) {
			if d := l.dumps[volume]; d.started {
				s.MemoryDumps = append(s.MemoryDumps, d.state)
			}
		}
	})
}
