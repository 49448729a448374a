package launcher

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/klog/v2"
)

// libvirt answers some failures to start a domain (swtpm_setup's, QEMU's) with "Check error
// log '<file>' for details": a file in the launcher's private directory, gone with the pod
// soon after. The launcher logs its end with the failure, so the reason survives in the
// pod's log (and in an e2e test's namespace dump).

var errorLogRef = regexp.MustCompile(`[Cc]heck error log '([^']+)'`)

// maxFailureLog is how much of the end of a referenced log is kept.
const maxFailureLog = 4 << 10

// failureLogs returns the ends of the log files err refers to that lie below dir.
func failureLogs(err error, dir string) map[string]string {
	if err == nil || dir == "" {
		return nil
	}
	out := map[string]string{}
	for _, m := range errorLogRef.FindAllStringSubmatch(err.Error(), -1) {
		path := filepath.Clean(m[1])
		if rel, rerr := filepath.Rel(dir, path); rerr != nil || strings.HasPrefix(rel, "..") {
			continue // not our libvirtd's
		}
		if tail, terr := fileTail(path, maxFailureLog); terr == nil {
			out[path] = tail
		}
	}
	return out
}

func fileTail(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return "", err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, n))
	return string(b), err
}

// logFailureDetails logs the ends of the logs a start failure refers to.
func (l *Launcher) logFailureDetails(err error) {
	for path, tail := range failureLogs(err, l.cfg.LibvirtStateDir) {
		klog.ErrorS(nil, "the start failed; its log says", "log", path, "tail", tail)
	}
}
