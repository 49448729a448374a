package localcsi

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// copyTree copies the directory src into dst, which must not exist, keeping modes, owners,
// times, symbolic links (as links) and holes in sparse files (a VM's disk image is mostly
// holes). It never follows a link and works on file descriptors only (openat, fstatat): a
// volume's content is written by whatever pod used it, and a directory swapped for a link
// while the copy runs must not make it read beyond the volume. Hard links become separate
// files; sockets, FIFOs and device nodes are left out (logged); extended attributes are not
// copied.
func copyTree(src, dst string) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := copyDirAt(sfd, dfd, src); err != nil {
		return err
	}
	return setAttrs(dfd, &st)
}

// copyDirAt copies the entries of the directory sfd into dfd; where names the source in errors.
func copyDirAt(sfd, dfd int, where string) error {
	names, err := readDirNames(sfd)
	if err != nil {
		return fmt.Errorf("read %s: %w", where, err)
	}
	for _, name := range names {
		path := where + "/" + name
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while we copy: the copy is of a volume in use
			}
			return fmt.Errorf("stat %s: %w", path, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			err = copySubdirAt(sfd, dfd, name, path)
		case unix.S_IFREG:
			err = copyFileAt(sfd, dfd, name, path)
		case unix.S_IFLNK:
			err = copyLinkAt(sfd, dfd, name, &st)
		default:
			klog.InfoS("not copied: not a file, directory or link", "path", path, "mode", fmt.Sprintf("%o", st.Mode))
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", path, err)
		}
	}
	return nil
}

func copySubdirAt(sfd, dfd int, name, path string) error {
	child, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(child)
	var st unix.Stat_t
	if err := unix.Fstat(child, &st); err != nil {
		return err
	}
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return err
	}
	out, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	if err := copyDirAt(child, out, path); err != nil {
		return err
	}
	return setAttrs(out, &st)
}

func copyFileAt(sfd, dfd int, name, path string) error {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		klog.InfoS("not copied: replaced by a non-file while copying", "path", path)
		return nil
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	if err := copySparse(in, out, st.Size); err != nil {
		return err
	}
	return setAttrs(out, &st)
}

// copySparse copies the data segments of in (SEEK_DATA/SEEK_HOLE) and leaves the holes holes.
func copySparse(in, out int, size int64) error {
	var off int64
	for off < size {
		data, err := unix.Seek(in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return fmt.Errorf("seek data: %w", err)
		}
		hole, err := unix.Seek(in, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("seek hole: %w", err)
		}
		if err := copyRange(in, out, data, hole); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(out, size)
}

// copyRange copies bytes [from, to) of in to the same offsets of out: copy_file_range where
// the file system has it, read and write where it does not.
func copyRange(in, out int, from, to int64) error {
	for src, dst := from, from; src < to; {
		n, err := unix.CopyFileRange(in, &src, out, &dst, int(min(to-src, 1<<30)), 0)
		switch {
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
			return copyRangeByBuffer(in, out, src, to)
		case err != nil:
			return fmt.Errorf("copy_file_range: %w", err)
		case n == 0:
			return nil // the file shrank while we copy
		}
	}
	return nil
}

func copyRangeByBuffer(in, out int, from, to int64) error {
	buf := make([]byte, 1<<20)
	for off := from; off < to; {
		n, err := unix.Pread(in, buf[:min(int64(len(buf)), to-off)], off)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			return nil
		}
		if _, err := unix.Pwrite(out, buf[:n], off); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		off += int64(n)
	}
	return nil
}

func copyLinkAt(sfd, dfd int, name string, st *unix.Stat_t) error {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(sfd, name, buf)
	if err != nil {
		return err
	}
	if err := unix.Symlinkat(string(buf[:n]), dfd, name); err != nil {
		return err
	}
	if err := unix.Fchownat(dfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

// setAttrs gives fd the owner, mode and times of st (the owner first: chown clears set-id bits).
func setAttrs(fd int, st *unix.Stat_t) error {
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	return unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(unix.TimespecToNsec(st.Atim)), unix.NsecToTimeval(unix.TimespecToNsec(st.Mtim))})
}

// readDirNames lists a directory by its descriptor (a duplicate, so the caller's stays open).
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}
