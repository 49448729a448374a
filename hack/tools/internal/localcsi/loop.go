package localcsi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A Block volume is a sparse file, data/disk.img, offered to pods through a loop device (the
// kernel's, shared by every node of the local cluster, as loop-provisioner's are): one
// read-write and, for read-only publishes, one read-only. They are attached at the first
// publish that needs them and stay attached until the volume is deleted (or the cluster goes
// down, which detaches every loop device backed by its files).
const blockFile = "disk.img"

// loopDevices are the loop devices attached to file, and whether each is read-only.
func loopDevices(file string) (map[string]bool, error) {
	backing, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	devs := map[string]bool{}
	for _, b := range backing {
		content, err := os.ReadFile(b)
		if err != nil || strings.TrimSpace(string(content)) != file {
			continue // detached meanwhile, or another file's
		}
		sysDir := filepath.Dir(filepath.Dir(b))
		ro, err := os.ReadFile(filepath.Join(sysDir, "ro"))
		if err != nil {
			continue
		}
		devs["/dev/"+filepath.Base(sysDir)] = strings.TrimSpace(string(ro)) == "1"
	}
	return devs, nil
}

// attachLoop returns a loop device attached to file, read-only or not, attaching one if
// there is none. A read-only publish gets a read-only device: a read-only bind mount does
// not stop anyone writing to a device node.
func attachLoop(file string, readOnly bool) (string, error) {
	devs, err := loopDevices(file)
	if err != nil {
		return "", err
	}
	for dev, ro := range devs {
		if ro == readOnly {
			return dev, nil
		}
	}
	args := []string{"--find", "--show", file}
	if readOnly {
		args = append([]string{"--read-only"}, args...)
	}
	out, err := exec.Command("losetup", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// detachLoop detaches every loop device attached to file.
func detachLoop(file string) error {
	devs, err := loopDevices(file)
	if err != nil {
		return err
	}
	var errs []error
	for dev := range devs {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("losetup --detach %s: %w: %s", dev, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}
