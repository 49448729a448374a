package launcher

import (
	"bytes"
	"context"
	"errors"
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
				return containerDiskError(vol, err)
			}
			opts.ContainerDisks[vol.Name] = img
			if err := createOverlay(ctx, l.ContainerDiskOverlay(vol.Name), img); err != nil {
				return failed(ReasonVolumeFailed, "containerDisk %s: %w", vol.Name, err)
			}
		case vol.EmptyDisk != nil:
			if err := createSparse(l.EmptyDisk(vol.Name), vol.EmptyDisk.Capacity.Value()); err != nil {
				return failed(ReasonVolumeFailed, "emptyDisk %s: %w", vol.Name, err)
			}
		case vol.CloudInitNoCloud != nil:
			nc, err := cloudinit.ForVolume(vmi, vol.CloudInitNoCloud, cfg.SecretsDir)
			if err != nil {
				return failed(ReasonVolumeFailed, "cloudInitNoCloud %s: %w", vol.Name, err)
			}
			if err := nc.WriteFile(l.CloudInitISO(vol.Name)); err != nil {
				return failed(ReasonVolumeFailed, "cloudInitNoCloud %s: %w", vol.Name, err)
			}
		case vol.PersistentVolumeClaim != nil, vol.DataVolume != nil: // a DataVolume is its claim
			// The pod says which it is: virt-controller maps a block claim at its device path
			// and mounts a filesystem claim. Character devices (a container's /dev/null,
			// /dev/kvm) are no claim.
			if isBlockDevice(l.PVCBlock(vol.Name)) {
				opts.BlockVolumes[vol.Name] = true
			} else if _, err := os.Stat(l.PVCFile(vol.Name)); err != nil {
				return failed(ReasonVolumeFailed, "persistentVolumeClaim %s: neither block device %s nor image %s", vol.Name, l.PVCBlock(vol.Name), l.PVCFile(vol.Name))
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
		if errors.Is(err, os.ErrNotExist) {
			return domain.Image{}, errNoDisk
		}
		if err != nil {
			return domain.Image{}, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
				if p != "" {
					return domain.Image{}, errManyDisks
				}
				p = filepath.Join(root, "disk", e.Name())
			}
		}
		if p == "" {
			return domain.Image{}, errNoDisk
		}
	}
	format, err := imageFormat(p)
	if errors.Is(err, os.ErrNotExist) {
		return domain.Image{}, errNoDisk
	}
	return domain.Image{Path: p, Format: format}, err
}

var (
	errNoDisk    = errors.New("no disk")
	errManyDisks = errors.New("more than one disk")
)

// containerDiskError says what is wrong with a containerDisk's image in the user's terms: the
// volume, the image and where the disk was looked for.
func containerDiskError(vol v1.Volume, err error) error {
	cd := vol.ContainerDisk
	switch {
	case errors.Is(err, errNoDisk) && cd.Path != "":
		return failed(ReasonContainerDiskNotFound, "containerDisk volume %q: image %q has no disk at path %q", vol.Name, cd.Image, cd.Path)
	case errors.Is(err, errNoDisk):
		return failed(ReasonContainerDiskNotFound, "containerDisk volume %q: image %q holds no disk: no file under /disk/ (a containerDisk image carries its disk image there)", vol.Name, cd.Image)
	case errors.Is(err, errManyDisks):
		return failed(ReasonContainerDiskAmbiguous, "containerDisk volume %q: image %q has more than one file under /disk/; set the volume's path", vol.Name, cd.Image)
	}
	return failed(ReasonVolumeFailed, "containerDisk volume %q (image %q): %w", vol.Name, cd.Image, err)
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
