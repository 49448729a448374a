// Package procstat reads what the benchmarks need of a process from /proc: its command name,
// its CPU time and that of the children it waited for, when it started (/proc/PID/stat), and
// its control groups (/proc/PID/cgroup).
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ClockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux architecture
// Hangar runs on.
const ClockTick = 10 * time.Millisecond

// Stat is one reading of a process.
type Stat struct {
	Comm string
	// CPU is user + system time of the process, its threads included (utime + stime).
	CPU time.Duration
	// ChildrenCPU is that of the children it waited for (cutime + cstime).
	ChildrenCPU time.Duration
	// StartTicks is when it started, in ticks since boot: a PID reused by another process
	// has another one.
	StartTicks uint64
}

// Read reads /proc/PID/stat.
func Read(pid int) (Stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	s, err := Parse(string(raw))
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// All reads every process's stat, by PID; one that ends meanwhile is left out.
func All() (map[int]Stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := make(map[int]Stat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		if st, err := Read(pid); err == nil {
			all[pid] = st
		}
	}
	return all, nil
}

// Started is when a process of this reading started, by the wall clock.
func (s Stat) Started() (time.Time, error) {
	// StartTicks counts on the boot clock (CLOCK_BOOTTIME), which the wall clock is not.
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, err
	}
	return time.Now().Add(time.Duration(s.StartTicks)*ClockTick - time.Duration(ts.Nano())), nil
}

// Cgroup is the content of /proc/PID/cgroup: a line per hierarchy, each with the process's
// control group in it (a pod's names the pod's UID).
func Cgroup(pid int) (string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return string(raw), err
}

// Parse parses the content of a /proc/PID/stat file.
func Parse(raw string) (Stat, error) {
	// The command name (field 2) is in parentheses and may hold spaces and parentheses; the
	// fields after the last ')' start at field 3 (state), which puts utime, stime, cutime and
	// cstime (14-17) at indexes 11-14 and starttime (22) at index 19.
	open, closing := strings.IndexByte(raw, '('), strings.LastIndexByte(raw, ')')
	if open < 0 || closing < open {
		return Stat{}, fmt.Errorf("no command name in %q", raw)
	}
	fields := strings.Fields(raw[closing+1:])
	if len(fields) < 20 {
		return Stat{}, fmt.Errorf("%d fields after the command, want at least 20", len(fields))
	}
	var ticks [4]int64
	for i := range ticks {
		v, err := strconv.ParseInt(fields[11+i], 10, 64)
		if err != nil {
			return Stat{}, err
		}
		ticks[i] = v
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Stat{}, err
	}
	return Stat{
		Comm:        raw[open+1 : closing],
		CPU:         time.Duration(ticks[0]+ticks[1]) * ClockTick,
		ChildrenCPU: time.Duration(ticks[2]+ticks[3]) * ClockTick,
		StartTicks:  start,
	}, nil
}
