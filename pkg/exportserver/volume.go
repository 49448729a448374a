// Package exportserver serves the volumes of a VirtualMachineExport over HTTPS in KubeVirt's
// URL layout (virt-exportserver): raw and gzipped disk images, and the files of a directory
// one at a time, as a listing or as a tar.gz. The export controller runs it in a pod of the
// user's namespace with the exported claims mounted read-only; the claims' contents are the
// tenant's, so every name and symbolic link in them is treated as hostile.
package exportserver

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind is how a volume is exported; it decides the URLs the volume has.
type Kind string

const (
	// KindKubeVirt is a directory holding a KubeVirt disk image, disk.img.
	KindKubeVirt Kind = "kubevirt"
	// KindBlock is a block device holding a KubeVirt disk image.
	KindBlock Kind = "block"
	// KindArchive is a directory of arbitrary files.
	KindArchive Kind = "archive"
)

// DiskImage is the file a KubeVirt disk's directory holds the image in.
const DiskImage = "disk.img"

// Volume is one exported volume: its name in the URLs, its kind and where the pod has it.
type Volume struct {
	Name string
	Kind Kind
	Path string
}

// String is the volume in the form of virt-exportserver's -volume flag, NAME=KIND:PATH, so
// the controller writes what ParseVolume reads.
func (v Volume) String() string {
	return fmt.Sprintf("%s=%s:%s", v.Name, v.Kind, v.Path)
}

// ParseVolume reads NAME=KIND:PATH. The name becomes a URL segment, so it must be a
// DNS-1123 subdomain (a VM's volume name or a claim's name is); the path must be absolute.
func ParseVolume(spec string) (Volume, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Volume{}, fmt.Errorf("volume %q: want NAME=KIND:PATH", spec)
	}
	kind, path, ok := strings.Cut(rest, ":")
	if !ok {
		return Volume{}, fmt.Errorf("volume %q: want NAME=KIND:PATH", spec)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Volume{}, fmt.Errorf("volume %q: name: %s", spec, strings.Join(errs, "; "))
	}
	switch Kind(kind) {
	case KindKubeVirt, KindBlock, KindArchive:
	default:
		return Volume{}, fmt.Errorf("volume %q: kind %q is none of %s, %s, %s", spec, kind, KindKubeVirt, KindBlock, KindArchive)
	}
	if !strings.HasPrefix(path, "/") {
		return Volume{}, fmt.Errorf("volume %q: path %q is not absolute", spec, path)
	}
	return Volume{Name: name, Kind: Kind(kind), Path: path}, nil
}
