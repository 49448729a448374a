// Package consolelog follows the guest's serial console log that the launcher writes (and
// rotates: at its size limit the file is renamed to <name>.1 and a new one started), for the
// launcher pod's guest-console-log container, whose standard output the kubelet keeps as the
// container's log: `kubectl logs POD -c guest-console-log`.
package consolelog

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// Follow copies the file at path to out as it grows, across rotations, until ctx ends (then
// it copies what is left and returns nil). It waits for the file to appear: the container
// starts before the launcher.
func Follow(ctx context.Context, path string, out io.Writer, poll time.Duration) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if f != nil {
			if err := drain(f, out, buf); err != nil {
				return err
			}
			switch replaced, err := replacedOrTruncated(f, path); {
			case err != nil:
				return err
			case replaced:
				// Rotated: what was written to the old file before the rename is read above
				// and again here; the new file is read from its start.
				if err := drain(f, out, buf); err != nil {
					return err
				}
				f.Close()
				f = nil
				continue
			}
		}
		select {
		case <-ctx.Done():
			if f != nil {
				return drain(f, out, buf)
			}
			return nil
		case <-time.After(poll):
		}
	}
}

// drain copies f from its offset to its end.
func drain(f *os.File, out io.Writer, buf []byte) error {
	_, err := io.CopyBuffer(out, onlyReader{f}, buf)
	return err
}

// replacedOrTruncated tells whether path names another file than f now (rotated), and
// starts f over when it was truncated below the offset read.
func replacedOrTruncated(f *os.File, path string) (bool, error) {
	cur, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil // renamed, the new file not there yet
	case err != nil:
		return false, err
	case !os.SameFile(cur, named):
		return true, nil
	}
	offset, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, err
	}
	if cur.Size() < offset {
		_, err = f.Seek(0, io.SeekStart)
	}
	return false, err
}

// onlyReader hides the file's WriterTo, so that io.CopyBuffer reads into the buffer given.
type onlyReader struct{ io.Reader }
