package localcsi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
}

func (n *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.d.node, AccessibleTopology: n.d.topology()}, nil
}

// NodeGetCapabilities: none. There is nothing to stage (a volume is a directory or a loop
// device, bound straight to each pod's target path).
func (n *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// targetPath checks a path the CO wants a volume at: absolute, clean, and below the
// directory the kubelet publishes file systems into (PublishDir), or block devices
// (BlockPublishDir), so no request binds a volume over an arbitrary path of the node.
func (n *nodeServer) targetPath(p string, block bool) (string, error) {
	if p == "" {
		return "", status.Error(codes.InvalidArgument, "no target path")
	}
	dir := n.d.publishDir
	if block {
		dir = n.d.blockPublishDir
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || !strings.HasPrefix(p, dir+"/") {
		return "", status.Errorf(codes.InvalidArgument, "target path %q: not a clean path below %s", p, dir)
	}
	return p, nil
}

// anyTargetPath: a target of either kind (unpublish does not say which).
func (n *nodeServer) anyTargetPath(p string) (string, error) {
	if t, err := n.targetPath(p, false); err == nil {
		return t, nil
	}
	return n.targetPath(p, true)
}

func (n *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, err := ParseID(VolumeKind, req.GetVolumeId())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "no volume capability")
	}
	block, err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()})
	if err != nil {
		return nil, err
	}
	target, err := n.targetPath(req.GetTargetPath(), block)
	if err != nil {
		return nil, err
	}
	// A staging path is ignored: nothing is staged. (The kubelet passes one for every block
	// volume, staged or not.)
	vol, err := n.d.store.Volume(id)
	if err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			return nil, status.Errorf(codes.NotFound, "volume %s lives on node %s, this is node %s", id, id.Node, n.d.node)
		}
		return nil, err
	}
	if vol.Block != block {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s is a %s volume", id, volumeMode(vol.Block))
	}
	readOnly := req.GetReadonly() ||
		req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	n.d.mountMu.Lock()
	defer n.d.mountMu.Unlock()
	// What is bound onto the target: the volume's directory, or its loop device.
	source := n.d.store.DataDir(id)
	if block {
		if source, err = attachLoop(filepath.Join(source, blockFile), readOnly); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
		}
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	}
	if mounted {
		// Published before: the same volume answers OK, anything else is a conflict.
		if same, err := sameFile(source, target); err != nil || !same {
			return nil, status.Errorf(codes.AlreadyExists, "target %s holds another mount", target)
		}
		if ro, err := isReadOnly(target); err != nil || ro != readOnly {
			return nil, status.Errorf(codes.AlreadyExists, "target %s holds volume %s, read-only %t", target, id, ro)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if block {
		// A device is bound onto a file; the kubelet makes its directory.
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "make target %s: %v", target, err)
		}
		f.Close()
	} else if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "make target %s: %v", target, err)
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s on %s: %v", source, target, err)
	}
	if readOnly {
		// A bind takes MS_RDONLY only on a remount.
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "read-only %s: %v", target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if _, err := ParseID(VolumeKind, req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	target, err := n.anyTargetPath(req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	n.d.mountMu.Lock()
	defer n.d.mountMu.Unlock()
	// Every mount on the target goes (a publish that was repeated after a crash may have
	// stacked two), then the directory.
	for {
		mounted, err := isMountPoint(target)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
		}
		if !mounted {
			break
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// mountInfo is the mount table of this process's mount namespace: mount point → options.
func mountInfo() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mounts := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		mounts[unescapeMountPath(fields[4])] = fields[5]
	}
	return mounts, sc.Err()
}

// unescapeMountPath undoes the kernel's octal escapes (\040 for a space, ...).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isMountPoint(path string) (bool, error) {
	mounts, err := mountInfo()
	if err != nil {
		return false, err
	}
	_, ok := mounts[path]
	return ok, nil
}

// isReadOnly: whether the mount at path is read-only (its per-mount options).
func isReadOnly(path string) (bool, error) {
	mounts, err := mountInfo()
	if err != nil {
		return false, err
	}
	opts, ok := mounts[path]
	if !ok {
		return false, fmt.Errorf("%s is not a mount point", path)
	}
	for _, o := range strings.Split(opts, ",") {
		if o == "ro" {
			return true, nil
		}
	}
	return false, nil
}

// sameFile: a and b are the same directory or device node (a bind mount shows its source's
// inode).
func sameFile(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}
