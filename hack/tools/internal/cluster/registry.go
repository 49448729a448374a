package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"
)

// The cluster's OCI registry: distribution's registry (built from the Go module proxy by
// hack/cluster/build.sh) on the host, at HostIP:RegistryPort, over TLS with a certificate of
// the cluster CA, its blobs in RegistryDir. Every node's containerd trusts it through a
// hosts.toml, so pods pull images pushed there as they would from any registry; the data
// outlives down (only down --purge deletes it).

// RegistryVersion is the version of github.com/distribution/distribution/v3 that build.sh
// builds.
const RegistryVersion = "v3.1.2"

// RegistryAddress is the registry's host:port, the first part of its images' names.
func (s *Settings) RegistryAddress() string {
	return netip.AddrPortFrom(s.HostIP, uint16(s.RegistryPort)).String()
}

// RegistryCA is the CA file a client of the registry trusts: the cluster's.
func (s *Settings) RegistryCA() string { return PKI{Dir: s.PKIDir()}.CertFile("ca") }

// RegistryConfigFile is the registry's configuration, written by up.
func (s *Settings) RegistryConfigFile() string { return filepath.Join(s.ConfigDir(), "registry.yml") }

// registryCert is the registry's serving certificate: the address nodes and pushers dial.
func (s *Settings) registryCert() CertSpec {
	return CertSpec{CommonName: "hangar-registry", Server: true, IPs: []net.IP{s.HostIP.AsSlice()}}
}

func (s *Settings) registryDaemon() Daemon {
	d := s.hostDaemon("registry", "serve", s.RegistryConfigFile())
	// Its tracing exports to an OTLP collector on localhost by default, and logs every
	// failure to reach one.
	d.Env = []string{"OTEL_TRACES_EXPORTER=none"}
	return d
}

// registryConfig: the filesystem driver, deletes allowed (a test may clean up its
// manifests), no authentication (the bridge reaches only the host and the nodes), and no
// HTTP secret: the registry makes one at start, which only matters behind a load balancer.
func (s *Settings) registryConfig() string {
	p := PKI{Dir: s.PKIDir()}
	return fmt.Sprintf(`# Written by hangar-cluster: the cluster's OCI registry, on the host.
version: 0.1
log:
  level: info
  fields: {service: registry}
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: %q
  tls:
    certificate: %q
    key: %q
  headers:
    X-Content-Type-Options: [nosniff]
`, s.RegistryDir(), s.RegistryAddress(), p.CertFile("registry"), p.KeyFile("registry"))
}

// registryHosts is a node's containerd's hosts.toml for the registry: HTTPS, the cluster CA.
func (s *Settings) registryHosts() string {
	url := "https://" + s.RegistryAddress()
	return fmt.Sprintf(`# Written by hangar-cluster: the cluster's registry, on the host.
server = %[1]q

[host.%[1]q]
  capabilities = ["pull", "resolve"]
  ca = %[2]q
`, url, s.RegistryCA())
}

// StartRegistry writes the registry's configuration and starts it, unless it runs.
func (s *Settings) StartRegistry() error {
	if err := writeFileAtomic(s.RegistryConfigFile(), []byte(s.registryConfig()), 0o644); err != nil {
		return err
	}
	return s.StartAndWait(s.registryDaemon(), 30*time.Second)
}

// RegistryEnv is what scripts need to push to the registry, as shell assignments:
// eval "$(hangar-cluster registry)".
func (s *Settings) RegistryEnv() string {
	return fmt.Sprintf("HANGAR_REGISTRY=%s\nHANGAR_REGISTRY_CA=%s\n", shellQuote(s.RegistryAddress()), shellQuote(s.RegistryCA()))
}

// shellQuote quotes v for a POSIX shell.
func shellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
