package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"
)

// testSettings are the default settings with the cluster directory in a temporary one.
func testSettings(t *testing.T, env map[string]string) *Settings {
	t.Helper()
	t.Setenv("HANGAR_CLUSTER_DIR", t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
	s, err := FromEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRegistryAddress(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{want: "10.216.0.1:15000"},
		{env: map[string]string{"HANGAR_REGISTRY_PORT": "25000", "HANGAR_NODE_CIDR": "10.99.0.0/24", "HANGAR_HOST_IP": "10.99.0.1"}, want: "10.99.0.1:25000"},
	}
	for _, tc := range tests {
		if got := testSettings(t, tc.env).RegistryAddress(); got != tc.want {
			t.Errorf("RegistryAddress with %v = %s; want %s", tc.env, got, tc.want)
		}
	}
}

// TestRegistryConfig: the registry serves TLS with its certificate on the host address, and
// keeps its blobs in the cluster directory.
func TestRegistryConfig(t *testing.T) {
	s := testSettings(t, nil)
	var cfg struct {
		Version string
		Storage struct {
			Filesystem struct{ RootDirectory string }
			Delete     struct{ Enabled bool }
		}
		HTTP struct {
			Addr string
			TLS  struct{ Certificate, Key string }
		}
	}
	if err := yaml.Unmarshal([]byte(s.registryConfig()), &cfg); err != nil {
		t.Fatal(err)
	}
	p := PKI{Dir: s.PKIDir()}
	want := cfg
	want.Version = "0.1"
	want.Storage.Filesystem.RootDirectory = filepath.Join(s.ClusterDir, "registry")
	want.Storage.Delete.Enabled = true
	want.HTTP.Addr = "10.216.0.1:15000"
	want.HTTP.TLS.Certificate, want.HTTP.TLS.Key = p.CertFile("registry"), p.KeyFile("registry")
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("registry configuration:\n%+v\nwant\n%+v\n---\n%s", cfg, want, s.registryConfig())
	}
}

// TestNodeRegistryHosts: each node's containerd looks up registry hosts in its config_path,
// where the registry's directory (host:port, as containerd names it) has a hosts.toml that
// reaches it over HTTPS, trusting the cluster CA.
func TestNodeRegistryHosts(t *testing.T) {
	s := testSettings(t, map[string]string{"HANGAR_NODES": "2"})
	for _, n := range s.AllNodes() {
		// An earlier run's registry on another port is forgotten.
		stale := filepath.Join(n.RegistryHostsDir(), "10.216.0.1:14000", "hosts.toml")
		if err := writeFileAtomic(stale, []byte(`server = "https://10.216.0.1:14000"`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteNodeConfigs(n); err != nil {
			t.Fatal(err)
		}
		if exists(filepath.Dir(stale)) {
			t.Errorf("%s: the stale registry's hosts directory stays", n.Name)
		}

		var containerd struct {
			Plugins struct {
				Images struct {
					PinnedImages struct{ Sandbox string } `toml:"pinned_images"`
					Registry     struct {
						ConfigPath string `toml:"config_path"`
					}
				} `toml:"io.containerd.cri.v1.images"`
			}
		}
		readTOML(t, filepath.Join(n.ConfigDir(), "containerd.toml"), &containerd)
		if got := containerd.Plugins.Images.Registry.ConfigPath; got != n.RegistryHostsDir() {
			t.Errorf("%s: containerd's registry config_path = %q; want %q", n.Name, got, n.RegistryHostsDir())
		}
		if got := containerd.Plugins.Images.PinnedImages.Sandbox; got != s.PauseImage {
			t.Errorf("%s: sandbox image %q; want %q", n.Name, got, s.PauseImage)
		}

		var hosts struct {
			Server string
			Host   map[string]struct {
				Capabilities []string
				CA           string
			}
		}
		readTOML(t, filepath.Join(n.RegistryHostsDir(), "10.216.0.1:15000", "hosts.toml"), &hosts)
		url := "https://10.216.0.1:15000"
		if hosts.Server != url {
			t.Errorf("%s: hosts.toml server = %q; want %q", n.Name, hosts.Server, url)
		}
		host, ok := hosts.Host[url]
		if !ok || len(hosts.Host) != 1 {
			t.Fatalf("%s: hosts.toml hosts %v; want %s alone", n.Name, hosts.Host, url)
		}
		if host.CA != s.RegistryCA() || host.CA != (PKI{Dir: s.PKIDir()}).CertFile("ca") {
			t.Errorf("%s: hosts.toml ca = %q; want the cluster CA", n.Name, host.CA)
		}
		if !reflect.DeepEqual(host.Capabilities, []string{"pull", "resolve"}) {
			t.Errorf("%s: capabilities %v; want pull, resolve", n.Name, host.Capabilities)
		}
	}
}

func readTOML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := toml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestRegistryCertificate: the cluster CA signs the registry's serving certificate for the
// host address, the name pushers and the nodes dial.
func TestRegistryCertificate(t *testing.T) {
	s := testSettings(t, nil)
	if err := s.MakePKI(); err != nil {
		t.Fatal(err)
	}
	p := PKI{Dir: s.PKIDir()}
	cert := readCert(t, p.CertFile("registry"))
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, s.RegistryCA()))
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "10.216.0.1", Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("registry certificate for 10.216.0.1: %v", err)
	}
	if len(cert.IPAddresses) != 1 || len(cert.DNSNames) != 0 {
		t.Errorf("registry certificate names IPs %v and DNS names %v; want 10.216.0.1 alone", cert.IPAddresses, cert.DNSNames)
	}
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestRegistryEnv: what hangar-cluster registry prints, a shell reads back as it was.
func TestRegistryEnv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here")
	s := testSettings(t, map[string]string{"HANGAR_CLUSTER_DIR": dir})
	out, err := exec.Command("sh", "-c", `eval "$1"; printf '%s\n%s' "$HANGAR_REGISTRY" "$HANGAR_REGISTRY_CA"`, "sh", s.RegistryEnv()).CombinedOutput()
	if err != nil {
		t.Fatalf("sh: %v: %s", err, out)
	}
	if want := s.RegistryAddress() + "\n" + filepath.Join(dir, "pki", "ca.crt"); string(out) != want {
		t.Errorf("the shell read %q; want %q", out, want)
	}
}
