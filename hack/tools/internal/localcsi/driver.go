// Package localcsi is hangar-local-csi, the local cluster's CSI driver (hack/cluster): it
// gives Kubernetes' snapshot machinery a real driver to work with on machines where no
// production storage exists. A volume is a directory in its node's data directory, bound
// into pods; a snapshot is a plain copy of that directory; a volume restored from a snapshot
// (or cloned from a volume) starts as a copy of it. One driver process runs per node, in the
// node's mount namespace, serving the Identity, Controller and Node services for its own
// node's volumes only (CSI sidecars in node-deployment mode talk to it), and registers with
// its kubelet through the kubelet's plugin registration socket.
//
// Block volumes are sparse files offered through loop devices.
//
// It is a test driver: capacity is bookkeeping, not a quota (for file systems); there is no
// expansion, no volume statistics, and nothing is replicated: a volume is lost with its node's
// directory.
package localcsi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

const (
	// DriverName is the CSI driver's name, as StorageClasses and the CSIDriver object say it.
	DriverName = "local.csi.hangar.dev"
	// TopologyKey is the topology segment a volume is pinned to its node by; the kubelet puts
	// it on the Node as a label when the driver registers.
	TopologyKey = "topology.local.csi.hangar.dev/node"
)

// Version is the driver's version, in GetPluginInfo.
var Version = "v0.1.0"

// Config is what a Driver needs.
type Config struct {
	// Node is the node's name: the CSI node ID and the topology segment.
	Node string
	// DataDir keeps the node's volumes and snapshots.
	DataDir string
	// Capacity is how many bytes the node's volumes may add up to.
	Capacity int64
	// PublishDir is the directory every NodePublish target of a file system must be below (the
	// kubelet's pods directory), BlockPublishDir that of a block device (the kubelet's CSI
	// volumeDevices directory).
	PublishDir, BlockPublishDir string
}

// Driver serves CSI for one node.
type Driver struct {
	node                        string
	publishDir, blockPublishDir string
	store                       *Store
	// mountMu serializes the node's mount changes.
	mountMu sync.Mutex
}

// New opens the node's store.
func New(cfg Config) (*Driver, error) {
	for _, dir := range []string{cfg.PublishDir, cfg.BlockPublishDir} {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
			return nil, fmt.Errorf("publish directory %q: an absolute, clean path below /", dir)
		}
	}
	store, err := NewStore(cfg.DataDir, cfg.Node, cfg.Capacity)
	if err != nil {
		return nil, err
	}
	return &Driver{node: cfg.Node, publishDir: cfg.PublishDir, blockPublishDir: cfg.BlockPublishDir, store: store}, nil
}

func (d *Driver) topology() *csi.Topology {
	return &csi.Topology{Segments: map[string]string{TopologyKey: d.node}}
}

// matches: the topology t includes this node.
func (d *Driver) matches(t *csi.Topology) bool {
	v, ok := t.GetSegments()[TopologyKey]
	return ok && v == d.node
}

// accessible: a volume on this node meets the requirements (none, or this node among the
// requisite or preferred topologies).
func (d *Driver) accessible(r *csi.TopologyRequirement) bool {
	if len(r.GetRequisite()) == 0 && len(r.GetPreferred()) == 0 {
		return true
	}
	for _, t := range append(r.GetRequisite(), r.GetPreferred()...) {
		if d.matches(t) {
			return true
		}
	}
	return false
}

// Register puts the driver's services on a gRPC server.
func (d *Driver) Register(s *grpc.Server) {
	csi.RegisterIdentityServer(s, &identityServer{})
	csi.RegisterControllerServer(s, &controllerServer{d: d})
	csi.RegisterNodeServer(s, &nodeServer{d: d})
	csi.RegisterGroupControllerServer(s, &groupControllerServer{})
}

// groupControllerServer says the driver takes no group snapshots: csi-snapshotter asks, and
// logs an error when the service is missing altogether.
type groupControllerServer struct {
	csi.UnimplementedGroupControllerServer
}

func (groupControllerServer) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	return &csi.GroupControllerGetCapabilitiesResponse{}, nil
}

type identityServer struct {
	csi.UnimplementedIdentityServer
}

func (identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: DriverName, VendorVersion: Version}, nil
}

func (identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
	}}, nil
}

func (identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Listen opens a unix socket at path, replacing a stale one (a socket file left by an earlier
// run); it refuses to replace anything that is not a socket.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// logCalls logs every call with its outcome; errors the CO caused at V(0), success at V(2).
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	if err != nil {
		klog.InfoS("call failed", "method", info.FullMethod, "code", status.Code(err), "error", status.Convert(err).Message(), "duration", time.Since(start))
	} else {
		klog.V(2).InfoS("call", "method", info.FullMethod, "duration", time.Since(start))
	}
	if err != nil && status.Code(err) == codes.Unknown {
		err = status.Error(codes.Internal, err.Error())
	}
	return resp, err
}

// NewServer is a gRPC server with the driver's services and call logging.
func (d *Driver) NewServer() *grpc.Server {
	s := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	d.Register(s)
	return s
}
