package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/cloudinit"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
)

// prepareVolumes creates the files the domain's disks refer to (overlays, empty disks,
// cloud-init ISOs) and reports what it found, for the converter. Files that exist already
// are kept: they belong to this instance's guest.
func prepareVolumes(ctx context.Context, vmi *v1.VirtualMachineInstance, cfg *Config, opts *domain.Options) error {
	l := opts.Layout
	opts.ContainerDisks = map[string]domain.Image{}
	opts.BlockVolumes = map[string]bool{}
	for _, vol := range vmi.Spec.Volumes {
		switch {
		case vol.ContainerDisk != nil:
			img, err := findContainerDiskImage(filepath.Join(cfg.ContainerDiskRoot, vol.Name), vol.ContainerDisk.Path)
			if err != nil {
				return fmt.Errorf("containerDisk %s: %w", vol.Name, err)
			}
			opts.ContainerDisks[vol.Name] = img
			if err := createOverlay(ctx, l.ContainerDiskOverlay(vol.Name), img); err != nil {
				return fmt.Errorf("containerDisk %s: %w", vol.Name, err)
			}
		case vol.EmptyDisk != nil:
			if err := createSparse(l.EmptyDisk(vol.Name), vol.EmptyDisk.Capacity.Value()); err != nil {
				return fmt.Errorf("emptyDisk %s: %w", vol.Name, err)
			}
		case vol.CloudInitNoCloud != nil:
			nc, err := cloudinit.ForVolume(vmi, vol.CloudInitNoCloud, cfg.SecretsDir)
			if err != nil {
				return fmt.Errorf("cloudInitNoCloud %s: %w", vol.Name, err)
			}
			if err := nc.WriteFile(l.CloudInitISO(vol.Name)); err != nil {
				return fmt.Errorf("cloudInitNoCloud %s: %w", vol.Name, err)
			}
		case vol.PersistentVolumeClaim != nil:
			// The pod says which it is: virt-controller maps a block claim at its device path
			// and mounts a filesystem claim. Character devices (a container's /dev/null,
			// /dev/kvm) are no claim.
			if isBlockDevice(l.PVCBlock(vol.Name)) {
				opts.BlockVolumes[vol.Name] = true
			} else if _, err := os.Stat(l.PVCFile(vol.Name)); err != nil {
				return fmt.Errorf("persistentVolumeClaim %s: neither block device %s nor image %s", vol.Name, l.PVCBlock(vol.Name), l.PVCFile(vol.Name))
			}
		}
	}
	return nil
}

func isBlockDevice(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0
}

// findContainerDiskImage finds the disk image in a containerDisk's files: the given path, or
// the one file under /disk, as KubeVirt does.
func findContainerDiskImage(root, path string) (domain.Image, error) {
	p := ""
	if path != "" {
		p = domain.UnderRoot(root, path)
	} else {
		entries, err := os.ReadDir(filepath.Join(root, "disk"))
		if err != nil {
			return domain.Image{}, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
				if p != "" {
					return domain.Image{}, fmt.Errorf("more than one file in %s/disk; set path", root)
				}
				p = filepath.Join(root, "disk", e.Name())
			}
		}
		if p == "" {
			return domain.Image{}, fmt.Errorf("no file in %s/disk", root)
		}
	}
	format, err := imageFormat(p)
	return domain.Image{Path: p, Format: format}, err
}

// imageFormat is qcow2 for a file with qcow2's magic, raw otherwise.
func imageFormat(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if n, _ := f.Read(magic); n == 4 && bytes.Equal(magic, []byte("QFI\xfb")) {
		return "qcow2", nil
	}
	return "raw", nil
}

func createOverlay(ctx context.Context, overlay string, backing domain.Image) error {
	if _, err := os.Stat(overlay); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(overlay), 0o755); err != nil {
		return err
	}
	tmp := overlay + ".tmp"
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2",
		"-b", backing.Path, "-F", backing.Format, tmp).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create overlay: %w: %s", err, out)
	}
	return os.Rename(tmp, overlay)
}

func createSparse(path string, size int64) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
