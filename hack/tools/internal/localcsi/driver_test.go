package localcsi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// privateNamespaceEnv marks the test binary re-executed in a mount namespace of its own.
const privateNamespaceEnv = "HANGAR_LOCALCSI_TEST_PRIVATE_MOUNTS"

// TestMain runs the tests, as root, in a private mount namespace of their own (unshare), so
// the bind mounts NodePublishVolume makes never reach the host's, whatever a failed test
// leaves behind.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 && os.Getenv(privateNamespaceEnv) == "" {
		if unshare, err := exec.LookPath("unshare"); err == nil {
			cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", os.Args[0]}, os.Args[1:]...)...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			cmd.Env = append(os.Environ(), privateNamespaceEnv+"=1")
			if err := cmd.Run(); err != nil {
				if exit, ok := err.(*exec.ExitError); ok {
					os.Exit(exit.ExitCode())
				}
				fmt.Fprintln(os.Stderr, "unshare:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

const (
	testNode = "hangar-node-1"
	gib      = int64(1 << 30)
)

// fixture is a driver of testNode on a temporary directory, served on a unix socket and
// called through CSI's gRPC clients, as the sidecars and the kubelet call it.
type fixture struct {
	dataDir, publishDir, blockPublishDir string
	driver                               *Driver
	identity                             csi.IdentityClient
	controller                           csi.ControllerClient
	node                                 csi.NodeClient
	group                                csi.GroupControllerClient
}

func newFixture(t *testing.T, capacity int64) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dataDir: filepath.Join(dir, "data"), publishDir: filepath.Join(dir, "pods"), blockPublishDir: filepath.Join(dir, "devices")}
	require.NoError(t, os.Mkdir(f.publishDir, 0o750))
	require.NoError(t, os.Mkdir(f.blockPublishDir, 0o750))
	d, err := New(Config{Node: testNode, DataDir: f.dataDir, Capacity: capacity, PublishDir: f.publishDir, BlockPublishDir: f.blockPublishDir})
	require.NoError(t, err)
	f.driver = d
	socket := filepath.Join(dir, "csi.sock")
	l, err := Listen(socket)
	require.NoError(t, err)
	srv := d.NewServer()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	f.identity, f.controller, f.node = csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	f.group = csi.NewGroupControllerClient(conn)
	return f
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var (
	rwo      = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	blockCap = &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
)

func volumeRequest(name string, bytes int64) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: bytes},
		VolumeCapabilities: []*csi.VolumeCapability{rwo},
	}
}

func (f *fixture) createVolume(t *testing.T, req *csi.CreateVolumeRequest) *csi.Volume {
	t.Helper()
	resp, err := f.controller.CreateVolume(ctx(t), req)
	require.NoError(t, err)
	return resp.Volume
}

// data is where a volume's content is on the node.
func (f *fixture) data(t *testing.T, volumeID string) string {
	t.Helper()
	id, err := ParseID(VolumeKind, volumeID)
	require.NoError(t, err)
	return f.driver.store.DataDir(id)
}

func requireCode(t *testing.T, want codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, status.Code(err), "error: %v", err)
}

func TestIdentity(t *testing.T) {
	f := newFixture(t, 10*gib)
	info, err := f.identity.GetPluginInfo(ctx(t), &csi.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, DriverName, info.Name)
	assert.NotEmpty(t, info.VendorVersion)

	caps, err := f.identity.GetPluginCapabilities(ctx(t), &csi.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	var services []csi.PluginCapability_Service_Type
	for _, c := range caps.Capabilities {
		services = append(services, c.GetService().GetType())
	}
	assert.ElementsMatch(t, []csi.PluginCapability_Service_Type{
		csi.PluginCapability_Service_CONTROLLER_SERVICE, csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS,
	}, services)

	_, err = f.identity.Probe(ctx(t), &csi.ProbeRequest{})
	require.NoError(t, err)

	groups, err := f.group.GroupControllerGetCapabilities(ctx(t), &csi.GroupControllerGetCapabilitiesRequest{})
	require.NoError(t, err)
	assert.Empty(t, groups.Capabilities, "no group snapshots")

	node, err := f.node.NodeGetInfo(ctx(t), &csi.NodeGetInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, testNode, node.NodeId)
	assert.Equal(t, map[string]string{TopologyKey: testNode}, node.AccessibleTopology.Segments)
}

func TestCreateVolume(t *testing.T) {
	other := func(req *csi.CreateVolumeRequest, edit func(*csi.CreateVolumeRequest)) *csi.CreateVolumeRequest {
		edit(req)
		return req
	}
	snapshotSource := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
	tests := []struct {
		name     string
		req      *csi.CreateVolumeRequest
		code     codes.Code
		capacity int64
	}{
		{name: "required bytes", req: volumeRequest("pvc-1", 2*gib), capacity: 2 * gib},
		{name: "no capacity range: the default size", req: other(volumeRequest("pvc-2", 0), func(r *csi.CreateVolumeRequest) { r.CapacityRange = nil }), capacity: DefaultVolumeSize},
		{name: "only a limit below the default", req: other(volumeRequest("pvc-3", 0), func(r *csi.CreateVolumeRequest) { r.CapacityRange.LimitBytes = 1 << 20 }), capacity: 1 << 20},
		{name: "topology of this node", req: other(volumeRequest("pvc-4", gib), func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: "hangar-node-2"}}, {Segments: map[string]string{TopologyKey: testNode}}}}
		}), capacity: gib},
		{name: "no name", req: volumeRequest("", gib), code: codes.InvalidArgument},
		{name: "name too long", req: volumeRequest(strings.Repeat("x", 129), gib), code: codes.InvalidArgument},
		{name: "name with a newline", req: volumeRequest("pvc\n1", gib), code: codes.InvalidArgument},
		{name: "required beyond the limit", req: other(volumeRequest("pvc-5", 2*gib), func(r *csi.CreateVolumeRequest) { r.CapacityRange.LimitBytes = gib }), code: codes.InvalidArgument},
		{name: "negative", req: volumeRequest("pvc-6", -1), code: codes.InvalidArgument},
		{name: "more than the node holds", req: volumeRequest("pvc-7", 11*gib), code: codes.OutOfRange},
		{name: "more than is left", req: volumeRequest("pvc-8", 9*gib), code: codes.ResourceExhausted},
		{name: "no capabilities", req: other(volumeRequest("pvc-9", gib), func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = nil }), code: codes.InvalidArgument},
		{name: "block and file system at once", req: other(volumeRequest("pvc-10", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{rwo, blockCap}
		}), code: codes.InvalidArgument},
		{name: "many nodes", req: other(volumeRequest("pvc-11", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}
		}), code: codes.InvalidArgument},
		{name: "mount flags", req: other(volumeRequest("pvc-12", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: []string{"noexec"}}}, AccessMode: rwo.AccessMode}}
		}), code: codes.InvalidArgument},
		{name: "xfs", req: other(volumeRequest("pvc-13", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "xfs"}}, AccessMode: rwo.AccessMode}}
		}), code: codes.InvalidArgument},
		{name: "parameters", req: other(volumeRequest("pvc-14", gib), func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"path": "/etc"} }), code: codes.InvalidArgument},
		{name: "another node's topology", req: other(volumeRequest("pvc-15", gib), func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: "hangar-node-2"}}}}
		}), code: codes.ResourceExhausted},
		{name: "source snapshot: not an ID", req: other(volumeRequest("pvc-16", gib), func(r *csi.CreateVolumeRequest) { r.VolumeContentSource = snapshotSource("../../etc") }), code: codes.NotFound},
		{name: "source snapshot: missing", req: other(volumeRequest("pvc-17", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = snapshotSource(newID(SnapshotKind, "nothing", testNode).String())
		}), code: codes.NotFound},
		{name: "source snapshot: on another node", req: other(volumeRequest("pvc-18", gib), func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = snapshotSource(newID(SnapshotKind, "elsewhere", "hangar-node-2").String())
		}), code: codes.ResourceExhausted},
	}
	// One node of 10 GiB; the cases run in order and the first four take 2+1+1/1024+1 GiB.
	f := newFixture(t, 10*gib)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := f.controller.CreateVolume(ctx(t), tt.req)
			if tt.code != codes.OK {
				requireCode(t, tt.code, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.capacity, resp.Volume.CapacityBytes)
			assert.Equal(t, []*csi.Topology{{Segments: map[string]string{TopologyKey: testNode}}}, resp.Volume.AccessibleTopology)
			id, err := ParseID(VolumeKind, resp.Volume.VolumeId)
			require.NoError(t, err)
			assert.Equal(t, testNode, id.Node)
			fi, err := os.Stat(f.driver.store.DataDir(id))
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
			assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm(), "pods of any user write a new volume")
		})
	}
}

func TestCreateVolumeIsIdempotent(t *testing.T) {
	f := newFixture(t, 10*gib)
	first := f.createVolume(t, volumeRequest("pvc-a", gib))
	require.NoError(t, os.WriteFile(filepath.Join(f.data(t, first.VolumeId), "kept"), []byte("x"), 0o644))

	again := f.createVolume(t, volumeRequest("pvc-a", gib))
	assert.Equal(t, first.VolumeId, again.VolumeId, "the same name is the same volume")
	assert.FileExists(t, filepath.Join(f.data(t, again.VolumeId), "kept"), "asking again keeps the content")

	_, err := f.controller.CreateVolume(ctx(t), volumeRequest("pvc-a", 2*gib))
	requireCode(t, codes.AlreadyExists, err)

	other := f.createVolume(t, volumeRequest("pvc-b", gib))
	assert.NotEqual(t, first.VolumeId, other.VolumeId)

	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: first.VolumeId})
	require.NoError(t, err)
	assert.NoDirExists(t, f.data(t, first.VolumeId))
	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: first.VolumeId})
	require.NoError(t, err, "deleting a deleted volume succeeds")
	assert.DirExists(t, f.data(t, other.VolumeId))
}

func TestCapacity(t *testing.T) {
	f := newFixture(t, 4*gib)
	free := func() int64 {
		resp, err := f.controller.GetCapacity(ctx(t), &csi.GetCapacityRequest{})
		require.NoError(t, err)
		return resp.AvailableCapacity
	}
	assert.Equal(t, 4*gib, free())
	a := f.createVolume(t, volumeRequest("a", 3*gib))
	assert.Equal(t, gib, free())
	_, err := f.controller.CreateVolume(ctx(t), volumeRequest("b", 2*gib))
	requireCode(t, codes.ResourceExhausted, err)
	f.createVolume(t, volumeRequest("c", gib))
	assert.Equal(t, int64(0), free())

	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: a.VolumeId})
	require.NoError(t, err)
	assert.Equal(t, 3*gib, free())
	f.createVolume(t, volumeRequest("b", 2*gib))

	other, err := f.controller.GetCapacity(ctx(t), &csi.GetCapacityRequest{AccessibleTopology: &csi.Topology{Segments: map[string]string{TopologyKey: "hangar-node-2"}}})
	require.NoError(t, err)
	assert.Equal(t, int64(0), other.AvailableCapacity, "another node's capacity is not this driver's")
}

// TestBadIDs: IDs that are not this driver's are refused before anything touches the disk.
func TestBadIDs(t *testing.T) {
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, volumeRequest("pvc", gib))
	// A file beside the data directory that a path traversal would reach.
	victim := filepath.Join(filepath.Dir(f.dataDir), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("x"), 0o644))
	target := filepath.Join(f.publishDir, "pod", "mount")

	bad := []string{
		"", "../victim", "vol-../../victim", "/etc/passwd", "vol-0123@hangar-node-1",
		"vol-" + strings.Repeat("0", 32), // no node
		"vol-" + strings.Repeat("0", 32) + "@../x",
		"vol-" + strings.Repeat("0", 32) + "@Hangar-Node-1",
		"vol-" + strings.Repeat("0", 32) + "@hangar-node-1\n",
		"vol-" + strings.Repeat("g", 32) + "@hangar-node-1",
		"snap-" + strings.Repeat("0", 32) + "@hangar-node-1", // a snapshot where a volume is meant
		vol.VolumeId + "/..",
	}
	// Deleting what an ID cannot name is done already (CSI wants OK for what does not exist),
	// and touches nothing; an empty ID is refused.
	deletes := map[string]func(id string) error{
		"DeleteVolume": func(id string) error {
			_, err := f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: id})
			return err
		},
		"DeleteSnapshot": func(id string) error {
			_, err := f.controller.DeleteSnapshot(ctx(t), &csi.DeleteSnapshotRequest{SnapshotId: strings.Replace(id, "vol-", "snap-", 1)})
			return err
		},
	}
	for call, do := range deletes {
		for _, id := range bad {
			t.Run(fmt.Sprintf("%s %q", call, id), func(t *testing.T) {
				if id == "" {
					requireCode(t, codes.InvalidArgument, do(id))
					return
				}
				require.NoError(t, do(id))
			})
		}
	}
	calls := map[string]func(id string) error{
		"ValidateVolumeCapabilities": func(id string) error {
			_, err := f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
			return err
		},
		"NodePublishVolume": func(id string) error {
			_, err := f.node.NodePublishVolume(ctx(t), &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: rwo})
			return err
		},
		"NodeUnpublishVolume": func(id string) error {
			_, err := f.node.NodeUnpublishVolume(ctx(t), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
			return err
		},
	}
	for call, do := range calls {
		for _, id := range bad {
			t.Run(fmt.Sprintf("%s %q", call, id), func(t *testing.T) {
				requireCode(t, codes.InvalidArgument, do(id))
			})
		}
	}
	assert.FileExists(t, victim)
	assert.DirExists(t, f.data(t, vol.VolumeId))
	assert.NoDirExists(t, target)

	// Well-formed IDs of volumes that do not exist, or live elsewhere.
	missing := newID(VolumeKind, "missing", testNode).String()
	elsewhere := newID(VolumeKind, "pvc", "hangar-node-2").String()
	_, err := f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: missing, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	requireCode(t, codes.NotFound, err)
	_, err = f.node.NodePublishVolume(ctx(t), &csi.NodePublishVolumeRequest{VolumeId: missing, TargetPath: target, VolumeCapability: rwo})
	requireCode(t, codes.NotFound, err)
	_, err = f.node.NodePublishVolume(ctx(t), &csi.NodePublishVolumeRequest{VolumeId: elsewhere, TargetPath: target, VolumeCapability: rwo})
	requireCode(t, codes.NotFound, err)
	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: missing})
	require.NoError(t, err, "a volume that is gone is deleted")
	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: elsewhere})
	requireCode(t, codes.FailedPrecondition, err)
}

func TestValidateVolumeCapabilities(t *testing.T) {
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, volumeRequest("pvc", gib))
	ok, err := f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.VolumeId, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	require.NoError(t, err)
	require.NotNil(t, ok.Confirmed)
	no, err := f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.VolumeId,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}})
	require.NoError(t, err)
	assert.Nil(t, no.Confirmed)
	assert.Contains(t, no.Message, "one node")
}

func TestParseID(t *testing.T) {
	id := newID(VolumeKind, "pvc-1", testNode)
	tests := []struct {
		in   string
		kind Kind
		ok   bool
	}{
		{id.String(), VolumeKind, true},
		{id.String(), SnapshotKind, false},
		{"snap-" + id.Hash + "@" + testNode, SnapshotKind, true},
		{"vol-" + id.Hash + "@a", VolumeKind, true},
		{"vol-" + id.Hash + "@" + strings.Repeat("a", 64), VolumeKind, false},
		{"vol-" + id.Hash + "@-node", VolumeKind, false},
		{"vol-" + id.Hash[:31] + "@" + testNode, VolumeKind, false},
		{" vol-" + id.Hash + "@" + testNode, VolumeKind, false},
		{"vol-" + id.Hash + "@" + testNode + "/x", VolumeKind, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseID(tt.kind, tt.in)
			if !tt.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.in, got.String())
		})
	}
	assert.Equal(t, id, newID(VolumeKind, "pvc-1", testNode), "IDs are stable")
	assert.NotEqual(t, id.Hash, newID(SnapshotKind, "pvc-1", testNode).Hash, "a snapshot and a volume of one name differ")
}
