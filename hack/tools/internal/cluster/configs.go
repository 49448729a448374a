package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// CNIBinDir holds the CNI plugins (Debian's containernetworking-plugins).
const CNIBinDir = "/usr/lib/cni"

// ContainerdBinary is containerd, built from the Go module proxy by build.sh: Debian's 1.6
// cannot mount image volumes.
func (s *Settings) ContainerdBinary() string { return s.Bin("containerd") }

// WriteNodeConfigs writes the node's CNI, containerd (with its registry hosts), kubelet and
// kube-proxy configuration.
func (s *Settings) WriteNodeConfigs(n *Node) error {
	// The registry of an earlier run on another port is forgotten.
	stale, _ := os.ReadDir(n.RegistryHostsDir())
	for _, e := range stale {
		if e.Name() != s.RegistryAddress() {
			if err := os.RemoveAll(filepath.Join(n.RegistryHostsDir(), e.Name())); err != nil {
				return err
			}
		}
	}
	files := map[string]string{
		filepath.Join(n.CNIConfDir(), "10-hangar.conflist"):                    s.cniConfig(n),
		filepath.Join(n.ConfigDir(), "containerd.toml"):                        s.containerdConfig(n),
		filepath.Join(n.RegistryHostsDir(), s.RegistryAddress(), "hosts.toml"): s.registryHosts(),
		filepath.Join(n.ConfigDir(), "kubelet.yaml"):                           s.kubeletConfig(n),
		filepath.Join(n.ConfigDir(), "kube-proxy.yaml"):                        s.kubeProxyConfig(n),
	}
	for file, content := range files {
		if err := writeFileAtomic(file, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cniConfig: the node's pods on a bridge whose address is their gateway. No ipMasq: pods
// reach the nodes, the host and each other, never beyond.
func (s *Settings) cniConfig(n *Node) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "hangar",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.CNIIPAMDir(), n.PodCIDR, n.PodGateway)
}

func (s *Settings) containerdConfig(n *Node) string {
	dir := n.ContainerdDir()
	return fmt.Sprintf(`# Written by hangar-cluster: node %[1]s's containerd, in the node's namespaces.
version = 3
root = %[2]q
state = %[3]q
# Snapshotters we do not use, the "opt" plugin (it would create /opt/containerd) and NRI (its
# socket has a fixed path, which every node's containerd would claim).
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.nri.v1.nri"]

[grpc]
  address = %[4]q
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    # Built locally and imported.
    sandbox = %[5]q
  [plugins.'io.containerd.cri.v1.images'.registry]
    # A directory per registry host (host:port) with its hosts.toml: the cluster's registry,
    # whose certificate the cluster CA signed. Other registries are unreachable.
    config_path = %[10]q

[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  enable_cdi = false
  # Devices a device plugin hands a container (/dev/kvm, /dev/net/tun, block volumes) are
  # owned by the container's runAsUser/runAsGroup: launcher pods run QEMU unprivileged, and
  # without systemd's udev rules these nodes are root's alone (mode 0600) on the host.
  device_ownership_from_security_context = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      # The shim built with this containerd, not one found on PATH (Debian's, if installed).
      runtime_path = %[6]q
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[8]q]
    conf_dir = %[9]q
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, n.Name, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.ContainerdSocket(), s.PauseImage,
		s.Bin("containerd-shim-runc-v2"), filepath.Join(dir, "state", "runc"), CNIBinDir, n.CNIConfDir(),
		n.RegistryHostsDir())
}

func (s *Settings) kubeletConfig(n *Node) string {
	p := PKI{Dir: s.PKIDir()}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
tlsCertFile: %[4]s
tlsPrivateKeyFile: %[5]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]s}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%[7]s
cgroupDriver: cgroupfs
# Every pod of this node below a cgroup of its own: nodes never clean up each other's.
cgroupRoot: %[8]s
failSwapOn: false
# root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj fails.
oomScoreAdj: 0
# Node status (and extended resources from device plugins) shows up within seconds.
nodeStatusUpdateFrequency: 3s
nodeStatusReportFrequency: 1m
clusterDNS: [%[9]s]
clusterDomain: %[10]s
resolvConf: /etc/resolv.conf
# Imported images cannot be pulled again: never GC them.
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%%
  imagefs.available: 2%%
serializeImagePulls: false
# The evented PLEG (alpha) stays off: with it the pods' status lagged their containers by
# seconds here, and the start path no longer waits for a relist (no init containers).
featureGates:
  # Image volumes: launcher pods mount containerDisk and kernelBoot images instead of copying
  # them (beta, off by default in v1.34).
  ImageVolume: true
`, n.IP, s.KubeletPort, s.KubeletHealthzPort, p.CertFile(n.Name+"-kubelet-serving"), p.KeyFile(n.Name+"-kubelet-serving"),
		p.CertFile("ca"), n.ContainerdSocket(), n.CgroupRoot(), s.DNSServiceIP, s.ClusterDomain)
}

func (s *Settings) kubeProxyConfig(n *Node) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: %[1]s
bindAddress: %[2]s
healthzBindAddress: 127.0.0.1:%[3]d
metricsBindAddress: 127.0.0.1:%[4]d
# Traffic to Services from outside the pod network (the host's) is masqueraded, so that the
# answers come back through this node.
clusterCIDR: %[5]s
clientConnection:
  kubeconfig: %[6]s
nodePortAddresses: [primary]
iptables:
  localhostNodePorts: false
# Zeros leave the conntrack sysctls alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.Name, n.IP, s.ProxyHealthzPort, s.ProxyMetricsPort, s.PodCIDR, filepath.Join(s.ConfigDir(), "kube-proxy.kubeconfig"))
}
