package localcsi

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"
)

// DefaultVolumeSize is a volume's size when the CO asks for none.
const DefaultVolumeSize = 1 << 30

type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
}

func (c *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// capacity is the size a volume gets from the CO's range: the required bytes, or the default
// when none are required (bounded by the limit).
func capacity(r *csi.CapacityRange) (int64, error) {
	if r == nil {
		return DefaultVolumeSize, nil
	}
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || limit < 0:
		return 0, status.Error(codes.InvalidArgument, "capacity range: negative bytes")
	case limit > 0 && req > limit:
		return 0, status.Errorf(codes.InvalidArgument, "capacity range: required %d bytes exceed the limit %d", req, limit)
	case req > 0:
		return req, nil
	case limit > 0:
		return min(limit, DefaultVolumeSize), nil
	}
	return DefaultVolumeSize, nil
}

func (c *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume %v", err)
	}
	block, err := checkCapabilities(req.GetVolumeCapabilities())
	if err != nil {
		return nil, err
	}
	if len(req.GetParameters()) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "this driver takes no parameters (got %d)", len(req.GetParameters()))
	}
	size, err := capacity(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if !c.d.accessible(req.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted, "the volume must be accessible where node %s is not", c.d.node)
	}
	var source *ID
	var content *csi.VolumeContentSource
	switch src := req.GetVolumeContentSource().GetType().(type) {
	case nil:
	case *csi.VolumeContentSource_Snapshot:
		id, err := ParseID(SnapshotKind, src.Snapshot.GetSnapshotId())
		if err != nil {
			return nil, status.Errorf(codes.NotFound, "source snapshot: %v", err)
		}
		source, content = &id, req.GetVolumeContentSource()
	case *csi.VolumeContentSource_Volume:
		id, err := ParseID(VolumeKind, src.Volume.GetVolumeId())
		if err != nil {
			return nil, status.Errorf(codes.NotFound, "source volume: %v", err)
		}
		source, content = &id, req.GetVolumeContentSource()
	default:
		return nil, status.Error(codes.InvalidArgument, "unsupported volume content source")
	}
	m, err := c.d.store.CreateVolume(req.GetName(), size, block, source)
	if err != nil {
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:           m.ID,
		CapacityBytes:      m.Capacity,
		ContentSource:      content,
		AccessibleTopology: []*csi.Topology{c.d.topology()},
	}}, nil
}

// DeleteVolume: CSI wants OK for a volume that does not exist, and an ID that is not of this
// driver's form names none; it is answered without touching the disk.
func (c *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume ID")
	}
	id, err := ParseID(VolumeKind, req.GetVolumeId())
	if err != nil {
		klog.InfoS("delete of a volume that cannot exist", "error", err)
		return &csi.DeleteVolumeResponse{}, nil
	}
	if err := c.d.store.DeleteVolume(id); err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (c *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id, err := ParseID(VolumeKind, req.GetVolumeId())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	vol, err := c.d.store.Volume(id)
	if err != nil {
		return nil, err
	}
	block, err := checkCapabilities(req.GetVolumeCapabilities())
	if err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	if block != vol.Block {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("volume %s is a %s volume", id, volumeMode(vol.Block))}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

func (c *controllerServer) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if req.GetAccessibleTopology() != nil && !c.d.matches(req.GetAccessibleTopology()) {
		return &csi.GetCapacityResponse{}, nil
	}
	if _, err := checkCapabilities(req.GetVolumeCapabilities()); req.GetVolumeCapabilities() != nil && err != nil {
		return &csi.GetCapacityResponse{}, nil
	}
	free, err := c.d.store.Available()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "capacity: %v", err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: free}, nil
}

func (c *controllerServer) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if err := validName(req.GetName()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "snapshot %v", err)
	}
	source, err := ParseID(VolumeKind, req.GetSourceVolumeId())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "source volume: %v", err)
	}
	if len(req.GetParameters()) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "this driver takes no snapshot parameters (got %d)", len(req.GetParameters()))
	}
	m, err := c.d.store.CreateSnapshot(req.GetName(), source)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: m.csi()}, nil
}

func (m snapshotMeta) csi() *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     m.ID,
		SourceVolumeId: m.SourceVolume,
		SizeBytes:      m.Size,
		CreationTime:   timestamppb.New(time.Unix(0, m.CreatedNanos)),
		ReadyToUse:     true, // the copy is whole before CreateSnapshot answers
	}
}

// DeleteSnapshot, as DeleteVolume: an ID of no snapshot of ours is deleted already.
func (c *controllerServer) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "no snapshot ID")
	}
	id, err := ParseID(SnapshotKind, req.GetSnapshotId())
	if err != nil {
		klog.InfoS("delete of a snapshot that cannot exist", "error", err)
		return &csi.DeleteSnapshotResponse{}, nil
	}
	if err := c.d.store.DeleteSnapshot(id); err != nil {
		return nil, err
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots pages through this node's snapshots in ID order; the token is the index of the
// next entry. An ID that is not this driver's matches nothing (CSI wants an empty list then).
func (c *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "max_entries is negative")
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || strconv.Itoa(n) != t {
			return nil, status.Errorf(codes.Aborted, "starting token %q is not one of ours", t)
		}
		start = n
	}
	all, err := c.d.store.Snapshots()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "list snapshots: %v", err)
	}
	var match []snapshotMeta
	for _, m := range all {
		if (req.GetSnapshotId() == "" || m.ID == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || m.SourceVolume == req.GetSourceVolumeId()) {
			match = append(match, m)
		}
	}
	if start > len(match) {
		return nil, status.Errorf(codes.Aborted, "starting token %d is beyond the %d snapshots", start, len(match))
	}
	end := len(match)
	if n := int(req.GetMaxEntries()); n > 0 && start+n < end {
		end = start + n
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, m := range match[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: m.csi()})
	}
	if end < len(match) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// checkCapabilities accepts what the driver can do, on one node: a file system (a
// directory, whatever fs_type is asked for: "" or ext4, the usual defaults) without mount
// flags, or a block device (a loop device on a file). It says which of the two all the
// capabilities ask for.
func checkCapabilities(caps []*csi.VolumeCapability) (block bool, err error) {
	if len(caps) == 0 {
		return false, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	for i, c := range caps {
		var isBlock bool
		switch {
		case c.GetBlock() != nil:
			isBlock = true
		case c.GetMount() != nil:
			mount := c.GetMount()
			if len(mount.GetMountFlags()) > 0 {
				return false, status.Errorf(codes.InvalidArgument, "mount flags %q: this driver binds a directory and takes none", mount.GetMountFlags())
			}
			if t := mount.GetFsType(); t != "" && t != "ext4" {
				return false, status.Errorf(codes.InvalidArgument, "fs_type %q: volumes are directories on the node's file system", t)
			}
		default:
			return false, status.Error(codes.InvalidArgument, "access type: mount or block")
		}
		if i > 0 && isBlock != block {
			return false, status.Error(codes.InvalidArgument, "a volume is either a file system or a block device, not both")
		}
		block = isBlock
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return false, status.Errorf(codes.InvalidArgument, "access mode %s: volumes live on one node", c.GetAccessMode().GetMode())
		}
	}
	return block, nil
}
