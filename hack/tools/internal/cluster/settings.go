// Package cluster runs a real Kubernetes of several nodes on one Linux machine, for Hangar's
// development and tests: the control plane as plain processes on the host, and every node as
// its own network namespace (joined to the others by veth through a host bridge) and mount
// namespace, with its own containerd, kubelet and kube-proxy. Nothing comes from outside:
// binaries are built from source (hack/cluster/build.sh), images locally, and the nodes pull
// only from the cluster's own registry on the host.
//
// What a node owns, nobody else sees: its addresses and ports, iptables rules and sysctls of
// the net.* tree (network namespace), and the fixed paths the kubelet and containerd insist
// on, bound over from the node's directory (mount namespace): /var/lib/kubelet (device
// plugins, pod volumes), /run/containerd (shim sockets), /var/log/pods, /var/log/containers,
// /var/lib/cni. Its pods live in cgroups below a cgroup root of its own. Shared with the host:
// the kernel (kernel-wide sysctls are recorded and restored), /dev (loop devices), the rest
// of the file system.
package cluster

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
)

// KubeVersion is the Kubernetes release the cluster runs (hack/tools/go.mod pins it).
const KubeVersion = "v1.34.4"

// Settings are the cluster's, from HANGAR_* variables; see the README of hack/cluster.
type Settings struct {
	// RepoRoot is the Hangar checkout; BinDir holds the binaries, ClusterDir the state.
	RepoRoot, BinDir, ClusterDir string
	// Nodes is how many nodes the cluster has.
	Nodes int

	// Bridge joins the host and the nodes; HostIP is the host's address on it, where the
	// control plane listens, in NodeCIDR, which holds the nodes' addresses.
	Bridge   string
	HostIP   netip.Addr
	NodeCIDR netip.Prefix
	// PodCIDR is the cluster's pod network; node i gets the i-th /24 of it.
	PodCIDR netip.Prefix
	// ServiceCIDR holds the Services; the kubernetes Service and cluster DNS have fixed ones.
	ServiceCIDR         netip.Prefix
	KubernetesServiceIP netip.Addr
	DNSServiceIP        netip.Addr
	ClusterDomain       string

	// APIServerPort and RegistryPort are on HostIP.
	EtcdPort, EtcdPeerPort, APIServerPort, RegistryPort    int
	ControllerManagerPort, SchedulerPort                   int
	KubeletPort, KubeletHealthzPort                        int
	ProxyHealthzPort, ProxyMetricsPort                     int
	PauseImage, BusyboxImage, CoreDNSImage, LocalPathImage string
	// EtcdFsync turns etcd's fsync on (off by default: the data is disposable).
	EtcdFsync bool
	// Snapshots turns the snapshot add-on on (HANGAR_CLUSTER_SNAPSHOTS=1): the VolumeSnapshot
	// CRDs, the snapshot controller and hangar-local-csi with its sidecars (snapshots.go).
	Snapshots bool
}

// FromEnv reads the settings; root is the repository.
func FromEnv(root string) (*Settings, error) {
	s := &Settings{RepoRoot: root}
	var errs []error
	str := func(key, def string) string {
		if v, ok := os.LookupEnv(key); ok && v != "" {
			return v
		}
		return def
	}
	integer := func(key string, def int) int {
		v := str(key, strconv.Itoa(def))
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65535 {
			errs = append(errs, fmt.Errorf("%s=%q: not a positive number", key, v))
			return def
		}
		return n
	}
	prefix := func(key, def string) netip.Prefix {
		p, err := netip.ParsePrefix(str(key, def))
		if err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("%s: %v", key, err))
		}
		return p.Masked()
	}
	addr := func(key, def string) netip.Addr {
		a, err := netip.ParseAddr(str(key, def))
		if err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("%s: not an IPv4 address", key))
		}
		return a
	}
	abs := func(key, def string) string {
		p, err := filepath.Abs(str(key, def))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
		return filepath.Clean(p)
	}
	s.BinDir = abs("HANGAR_BIN_DIR", filepath.Join(root, "_output", "bin"))
	s.ClusterDir = abs("HANGAR_CLUSTER_DIR", filepath.Join(root, "_cluster"))
	s.Nodes = integer("HANGAR_NODES", 1)
	s.Bridge = str("HANGAR_BRIDGE", "hangar0")
	s.NodeCIDR = prefix("HANGAR_NODE_CIDR", "10.216.0.0/24")
	s.HostIP = addr("HANGAR_HOST_IP", "10.216.0.1")
	s.PodCIDR = prefix("HANGAR_POD_CIDR", "10.217.0.0/16")
	s.ServiceCIDR = prefix("HANGAR_SERVICE_CIDR", "10.218.0.0/24")
	s.KubernetesServiceIP = addr("HANGAR_KUBERNETES_SERVICE_IP", "10.218.0.1")
	s.DNSServiceIP = addr("HANGAR_DNS_SERVICE_IP", "10.218.0.10")
	s.ClusterDomain = str("HANGAR_CLUSTER_DOMAIN", "cluster.local")
	s.EtcdPort = integer("HANGAR_ETCD_PORT", 23790)
	s.EtcdPeerPort = integer("HANGAR_ETCD_PEER_PORT", 23800)
	s.APIServerPort = integer("HANGAR_APISERVER_PORT", 16443)
	s.ControllerManagerPort = integer("HANGAR_CONTROLLER_MANAGER_PORT", 20257)
	s.SchedulerPort = integer("HANGAR_SCHEDULER_PORT", 20259)
	// A node's ports are in its own network namespace: every node uses the same.
	s.KubeletPort = integer("HANGAR_KUBELET_PORT", 20250)
	s.KubeletHealthzPort = integer("HANGAR_KUBELET_HEALTHZ_PORT", 20248)
	s.ProxyHealthzPort = integer("HANGAR_PROXY_HEALTHZ_PORT", 20256)
	s.ProxyMetricsPort = integer("HANGAR_PROXY_METRICS_PORT", 20249)
	s.RegistryPort = integer("HANGAR_REGISTRY_PORT", 15000)
	s.PauseImage = str("HANGAR_PAUSE_IMAGE", "hangar.local/pause:v1")
	s.BusyboxImage = str("HANGAR_BUSYBOX_IMAGE", "hangar.local/busybox:v2")
	s.CoreDNSImage = str("HANGAR_COREDNS_IMAGE", "hangar.local/coredns:"+CoreDNSVersion)
	s.LocalPathImage = str("HANGAR_LOCAL_PATH_IMAGE", "hangar.local/local-path-provisioner:"+LocalPathVersion)
	s.EtcdFsync = str("HANGAR_ETCD_FSYNC", "false") == "true"
	switch v := str("HANGAR_CLUSTER_SNAPSHOTS", "0"); v {
	case "0", "1":
		s.Snapshots = v == "1"
	default:
		errs = append(errs, fmt.Errorf("HANGAR_CLUSTER_SNAPSHOTS=%q: 0 or 1", v))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("settings: %v", errs)
	}
	return s, s.validate()
}

func (s *Settings) validate() error {
	if s.Nodes > 200 {
		return fmt.Errorf("HANGAR_NODES=%d: at most 200", s.Nodes)
	}
	if !s.NodeCIDR.Contains(s.HostIP) {
		return fmt.Errorf("host IP %s is not in the node network %s", s.HostIP, s.NodeCIDR)
	}
	if s.NodeCIDR.Bits() > 24 {
		return fmt.Errorf("node network %s: at least a /24", s.NodeCIDR)
	}
	if s.PodCIDR.Bits() > 16 {
		return fmt.Errorf("pod network %s: at least a /16 (a /24 per node)", s.PodCIDR)
	}
	if !s.ServiceCIDR.Contains(s.KubernetesServiceIP) || !s.ServiceCIDR.Contains(s.DNSServiceIP) {
		return fmt.Errorf("the kubernetes and DNS Service IPs must be in %s", s.ServiceCIDR)
	}
	for _, p := range []netip.Prefix{s.PodCIDR, s.ServiceCIDR} {
		if p.Overlaps(s.NodeCIDR) {
			return fmt.Errorf("networks %s and %s overlap", p, s.NodeCIDR)
		}
	}
	if s.PodCIDR.Overlaps(s.ServiceCIDR) {
		return fmt.Errorf("networks %s and %s overlap", s.PodCIDR, s.ServiceCIDR)
	}
	// sun_path holds 108 bytes: containerd's socket is the longest path below the directory.
	if n := len(s.Node(s.Nodes).ContainerdSocket()); n > 100 {
		return fmt.Errorf("HANGAR_CLUSTER_DIR %s is too long for unix sockets", s.ClusterDir)
	}
	return nil
}

// Node is one node of the cluster.
type Node struct {
	s *Settings
	// Index counts from 1.
	Index int
	// Name is the Node object's name, the network namespace's and the cgroup root's.
	Name string
	// IP is the node's address on the bridge; PodCIDR its pods' network, PodGateway the
	// address of its CNI bridge.
	IP         netip.Addr
	PodCIDR    netip.Prefix
	PodGateway netip.Addr
}

// Node returns node i (from 1).
func (s *Settings) Node(i int) *Node {
	ip := s.NodeCIDR.Addr().As4()
	ip[3] += byte(10 + i)
	pod := s.PodCIDR.Addr().As4()
	pod[2] += byte(i)
	podNet := netip.PrefixFrom(netip.AddrFrom4(pod), 24)
	gw := pod
	gw[3] = 1
	return &Node{s: s, Index: i, Name: fmt.Sprintf("hangar-node-%d", i), IP: netip.AddrFrom4(ip), PodCIDR: podNet, PodGateway: netip.AddrFrom4(gw)}
}

// nodeIndex is the index of this cluster's node called name (a Node object's or its state
// directory's name); false for any other name.
func (s *Settings) nodeIndex(name string) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(name, "hangar-node-%d", &i); err != nil || i < 1 || i > 200 || name != s.Node(i).Name {
		return 0, false
	}
	return i, true
}

// AllNodes are the cluster's nodes.
func (s *Settings) AllNodes() []*Node {
	var nodes []*Node
	for i := 1; i <= s.Nodes; i++ {
		nodes = append(nodes, s.Node(i))
	}
	return nodes
}

// Paths of the cluster directory.
func (s *Settings) PKIDir() string       { return filepath.Join(s.ClusterDir, "pki") }
func (s *Settings) ConfigDir() string    { return filepath.Join(s.ClusterDir, "config") }
func (s *Settings) LogDir() string       { return filepath.Join(s.ClusterDir, "logs") }
func (s *Settings) PidDir() string       { return filepath.Join(s.ClusterDir, "run") }
func (s *Settings) HostStateDir() string { return filepath.Join(s.ClusterDir, "host") }
func (s *Settings) ImageDir() string     { return filepath.Join(s.ClusterDir, "images") }
func (s *Settings) EtcdDataDir() string  { return filepath.Join(s.ClusterDir, "etcd") }
func (s *Settings) NodesDir() string     { return filepath.Join(s.ClusterDir, "nodes") }
func (s *Settings) RegistryDir() string  { return filepath.Join(s.ClusterDir, "registry") }

// NamespaceDir holds the nodes' mount namespace files, on a private mount of its own.
func (s *Settings) NamespaceDir() string { return filepath.Join(s.ClusterDir, "ns") }

// AdminKubeconfig is the cluster admin's kubeconfig.
func (s *Settings) AdminKubeconfig() string { return filepath.Join(s.ClusterDir, "kubeconfig") }

// APIServerURL is where kube-apiserver listens.
func (s *Settings) APIServerURL() string {
	return fmt.Sprintf("https://%s:%d", s.HostIP, s.APIServerPort)
}

// Bin is a binary of the cluster's.
func (s *Settings) Bin(name string) string { return filepath.Join(s.BinDir, name) }

// Paths of a node.
func (n *Node) Dir() string              { return filepath.Join(n.s.NodesDir(), n.Name) }
func (n *Node) ConfigDir() string        { return filepath.Join(n.Dir(), "config") }
func (n *Node) LogDir() string           { return filepath.Join(n.Dir(), "logs") }
func (n *Node) ContainerdDir() string    { return filepath.Join(n.Dir(), "containerd") }
func (n *Node) ContainerdSocket() string { return filepath.Join(n.ContainerdDir(), "containerd.sock") }
func (n *Node) CNIConfDir() string       { return filepath.Join(n.Dir(), "cni", "net.d") }
func (n *Node) CNIIPAMDir() string       { return filepath.Join(n.Dir(), "cni", "ipam") }

// RegistryHostsDir is containerd's config_path: a directory per registry host with its
// hosts.toml.
func (n *Node) RegistryHostsDir() string { return filepath.Join(n.ConfigDir(), "registry-hosts") }

// Netns is the node's network namespace (ip netns).
func (n *Node) Netns() string { return n.Name }

// NetnsPath is the network namespace's file.
func (n *Node) NetnsPath() string { return filepath.Join("/run/netns", n.Netns()) }

// MountNamespace is the node's mount namespace file.
func (n *Node) MountNamespace() string { return filepath.Join(n.s.NamespaceDir(), n.Name+".mnt") }

// CgroupRoot is the kubelet's cgroup root: every pod of the node lives below it.
func (n *Node) CgroupRoot() string { return "/" + n.Name }

// HostLink is the host's end of the node's veth pair, on the bridge.
func (n *Node) HostLink() string { return fmt.Sprintf("hangar-n%d", n.Index) }

// PrivateBinds are the fixed paths the kubelet, containerd and CNI use whatever they are
// told, bound over in the node's mount namespace from directories of the node's own: the
// host and the other nodes never see them.
func (n *Node) PrivateBinds() []Bind {
	return []Bind{
		{Source: filepath.Join(n.Dir(), "kubelet"), Target: "/var/lib/kubelet"},
		{Source: filepath.Join(n.Dir(), "run-containerd"), Target: "/run/containerd"},
		{Source: filepath.Join(n.Dir(), "pod-logs"), Target: "/var/log/pods"},
		{Source: filepath.Join(n.Dir(), "container-logs"), Target: "/var/log/containers"},
		{Source: filepath.Join(n.Dir(), "cni-cache"), Target: "/var/lib/cni"},
		{Source: filepath.Join(n.Dir(), "local-path"), Target: LocalPathDir},
	}
}

// Bind is a bind mount in a node's mount namespace.
type Bind struct{ Source, Target string }

// LocalPathDir is where the local-path provisioner keeps a node's volumes (in the node's
// mount namespace).
const LocalPathDir = "/var/lib/hangar-local-path"
