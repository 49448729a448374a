// hangar-copy copies files out of a container image into a directory shared with the
// launcher: `hangar-copy DEST PATH...` copies each absolute PATH to DEST/PATH (directories
// with everything below them). The launcher pod runs it inside kernelBoot and containerDisk
// images, which often have no shell or cp, so it is a static binary with no dependencies; a
// first init container puts it into an emptyDir from the virt-launcher image.
//
// `hangar-copy -install DIR` copies the binary itself into DIR, so that first init container
// needs no cp either.
//
// `hangar-copy -hold [FILE SIZE]` is an attachment pod's one process (docs/hotplug.md): it
// makes FILE, a sparse disk image of SIZE bytes, on the pod's file system claim if there is
// none yet (as the launcher does for its cold-plugged claims), then waits until the pod ends.
// A memory dump's pod makes an empty FILE (SIZE 0), which the dump fills.
//
// A PATH the image does not have is skipped with a note, not an error: the launcher then says
// what is missing in the instance's status, naming the image and the path (a containerDisk
// image without /disk, a kernelBoot image without its kernelPath), where an init container
// that failed would leave only "PodFailed".
//
// Symbolic links are followed (a link into the image would dangle in the launcher's
// container), holes in files are kept (raw disk images are sparse), and copies are readable
// by everyone, as the launcher may run as another user than the copy.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "-hold" {
		exit(hold(os.Args[2:]))
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "-install" {
		self, err := os.Executable()
		if err == nil {
			err = copyFile(self, filepath.Join(os.Args[2], "hangar-copy"), 0o755)
		}
		exit(err)
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: hangar-copy DEST PATH... | hangar-copy -install DIR")
		os.Exit(2)
	}
	dest := os.Args[1]
	for _, p := range os.Args[2:] {
		err := copyPath(p, underRoot(dest, p))
		if errors.Is(err, fs.ErrNotExist) && isMissing(p) {
			fmt.Fprintf(os.Stderr, "hangar-copy: %s is not in the image; skipped (the launcher reports it)\n", p)
			continue
		}
		exit(err)
	}
}

func exit(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "hangar-copy: %v\n", err)
		os.Exit(1)
	}
}

// isMissing says whether the image lacks p itself (not a file below it or a link it holds).
func isMissing(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// underRoot is p below root; ".." cannot leave root (as the launcher resolves these paths).
func underRoot(root, p string) string {
	return filepath.Join(root, filepath.Clean("/"+p))
}

// copyPath copies the file or directory src to dst.
func copyPath(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, 0o644)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		fi, err := os.Stat(p) // follows links
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			// Linked directories could loop, devices and sockets mean nothing elsewhere.
			fmt.Fprintf(os.Stderr, "hangar-copy: skipping %s (%s)\n", p, fi.Mode().Type())
			return nil
		}
		return copyFile(p, target, 0o644)
	})
}

// copyFile copies src to dst through a temporary file, so a reader never sees half a copy,
// seeking over blocks of zeros so that sparse images stay sparse.
func copyFile(src, dst string, mode os.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".hangar-copy"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	buf := make([]byte, 1<<20)
	zero := make([]byte, len(buf))
	var size int64
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if bytes.Equal(buf[:n], zero[:n]) {
				_, err = out.Seek(int64(n), io.SeekCurrent)
			} else {
				_, err = out.Write(buf[:n])
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", dst, err)
			}
			size += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read %s: %w", src, rerr)
		}
	}
	// A trailing hole leaves the file short; the size makes it whole.
	if err = out.Truncate(size); err != nil {
		return err
	}
	if err = out.Chmod(mode); err != nil { // the umask must not take the others' read bit
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// hold makes the disk image args name (FILE SIZE) if it is missing, then waits for SIGTERM.
func hold(args []string) error {
	switch len(args) {
	case 0:
	case 2:
		size, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("-hold %s: the size is not a number of bytes", args[1])
		}
		if err := createImage(args[0], size); err != nil {
			return err
		}
	default:
		return errors.New("usage: hangar-copy -hold [FILE SIZE]")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	return nil
}

// createImage makes path a sparse file of size bytes, unless something is there already: an
// image the claim holds is the guest's data.
func createImage(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
