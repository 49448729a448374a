package cluster

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The daemons, in start order; down stops them in reverse.

func (s *Settings) hostDaemon(name string, args ...string) Daemon {
	return Daemon{Name: name, Binary: s.Bin(name), Args: args, LogFile: filepath.Join(s.LogDir(), name+".log")}
}

func (s *Settings) nodeDaemon(n *Node, name, binary string, args ...string) Daemon {
	return Daemon{Name: name + "@" + n.Name, Binary: binary, Args: args, Node: n, LogFile: filepath.Join(n.LogDir(), name+".log")}
}

// ControlPlane are the host's daemons.
func (s *Settings) ControlPlane() []Daemon {
	p := PKI{Dir: s.PKIDir()}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", s.EtcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", s.EtcdPeerPort)
	etcdArgs := []string{"--name", "hangar", "--data-dir", s.EtcdDataDir(),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "hangar=" + peerURL, "--log-level", "warn"}
	if !s.EtcdFsync {
		// The data is disposable, and fsync dominates write latency on a VM disk.
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync=true")
	}
	cm := filepath.Join(s.ConfigDir(), "controller-manager.kubeconfig")
	sched := filepath.Join(s.ConfigDir(), "scheduler.kubeconfig")
	return []Daemon{
		s.hostDaemon("etcd", etcdArgs...),
		s.hostDaemon("kube-apiserver",
			"--etcd-servers", etcdURL,
			"--bind-address", s.HostIP.String(),
			"--advertise-address", s.HostIP.String(),
			"--secure-port", strconv.Itoa(s.APIServerPort),
			"--tls-cert-file", p.CertFile("apiserver"), "--tls-private-key-file", p.KeyFile("apiserver"),
			"--client-ca-file", p.CertFile("ca"),
			"--service-cluster-ip-range", s.ServiceCIDR.String(),
			"--service-account-issuer", "https://kubernetes.default.svc."+s.ClusterDomain,
			"--service-account-key-file", filepath.Join(s.PKIDir(), "sa.pub"),
			"--service-account-signing-key-file", p.KeyFile("sa"),
			"--authorization-mode", "Node,RBAC",
			"--enable-admission-plugins", "NodeRestriction",
			"--admission-control-config-file", s.AdmissionConfig(),
			"--allow-privileged=true",
			"--kubelet-client-certificate", p.CertFile("apiserver-kubelet-client"),
			"--kubelet-client-key", p.KeyFile("apiserver-kubelet-client"),
			"--kubelet-certificate-authority", p.CertFile("ca"),
			"--kubelet-preferred-address-types", "InternalIP",
			// What an aggregated API server (virt-api) needs: request-header authentication
			// with a CA of its own, and the aggregator's client certificate.
			"--requestheader-client-ca-file", p.CertFile("front-proxy-ca"),
			"--requestheader-allowed-names", "front-proxy-client",
			"--requestheader-username-headers", "X-Remote-User",
			"--requestheader-group-headers", "X-Remote-Group",
			"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
			"--proxy-client-cert-file", p.CertFile("front-proxy-client"),
			"--proxy-client-key-file", p.KeyFile("front-proxy-client"),
			"--enable-aggregator-routing=true",
			// Image volumes are beta and off by default in v1.34: without the gate the API
			// server drops a pod's image volume sources.
			"--feature-gates=ImageVolume=true",
			"--profiling=false", "--v=1"),
		s.hostDaemon("kube-controller-manager",
			"--kubeconfig", cm, "--authentication-kubeconfig", cm, "--authorization-kubeconfig", cm,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(s.ControllerManagerPort),
			"--leader-elect=false", "--cluster-name", "hangar",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file", p.KeyFile("sa"),
			"--root-ca-file", p.CertFile("ca"),
			"--cluster-signing-cert-file", p.CertFile("ca"), "--cluster-signing-key-file", p.KeyFile("ca"),
			// A node whose kubelet stops reporting is NotReady after 20 s, and its pods are
			// evicted 30 s later (the taint's toleration): failover tests wait for it.
			"--node-monitor-grace-period", "20s",
			"--enable-garbage-collector=true",
			"--profiling=false", "--v=1"),
		s.hostDaemon("kube-scheduler",
			"--kubeconfig", sched, "--authentication-kubeconfig", sched, "--authorization-kubeconfig", sched,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(s.SchedulerPort),
			"--leader-elect=false", "--profiling=false", "--v=1"),
	}
}

// NodeDaemons are a node's daemons, in start order.
func (s *Settings) NodeDaemons(n *Node) []Daemon {
	cfg := n.ConfigDir()
	return []Daemon{
		s.nodeDaemon(n, "containerd", s.ContainerdBinary(), "--config", filepath.Join(cfg, "containerd.toml")),
		s.nodeDaemon(n, "kubelet", s.Bin("kubelet"),
			"--config", filepath.Join(cfg, "kubelet.yaml"),
			"--kubeconfig", filepath.Join(cfg, "kubelet.kubeconfig"),
			"--hostname-override", n.Name,
			"--node-ip", n.IP.String(),
			"--v=1"),
		s.nodeDaemon(n, "kube-proxy", s.Bin("kube-proxy"), "--config", filepath.Join(cfg, "kube-proxy.yaml"), "--v=1"),
	}
}

// ready checks whether a started daemon serves; the answer names what is missing.
func (s *Settings) ready(d Daemon) error {
	switch {
	case d.Name == "etcd":
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/health", s.EtcdPort), nil)
	case d.Name == "kube-apiserver":
		return httpOK(s.APIServerURL()+"/readyz", s.caPool())
	case d.Name == "kube-controller-manager":
		return httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", s.ControllerManagerPort), nil)
	case d.Name == "kube-scheduler":
		return httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", s.SchedulerPort), nil)
	case d.Name == "registry":
		return httpOK("https://"+s.RegistryAddress()+"/v2/", s.caPool())
	case d.Node != nil && d.Binary == s.ContainerdBinary():
		if _, err := os.Stat(d.Node.ContainerdSocket()); err != nil {
			return err
		}
		_, err := output(s.Bin("ctr"), "--address", d.Node.ContainerdSocket(), "version")
		return err
	case d.Node != nil:
		// The kubelet's and kube-proxy's health ports are on the node's loopback.
		port := s.KubeletHealthzPort
		if filepath.Base(d.Binary) == "kube-proxy" {
			port = s.ProxyHealthzPort
		}
		return healthInNetns(d.Node, port)
	}
	return nil
}

func (s *Settings) caPool() *x509.CertPool {
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(PKI{Dir: s.PKIDir()}.CertFile("ca")); err == nil {
		pool.AppendCertsFromPEM(b)
	}
	return pool
}

// httpOK gets url; pool verifies the server, or nothing is verified when nil (a health port
// on loopback with a self-signed certificate).
func httpOK(url string, pool *x509.CertPool) error {
	tlsCfg := &tls.Config{RootCAs: pool, InsecureSkipVerify: pool == nil} //nolint:gosec // loopback health checks
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// healthInNetns gets /healthz on the node's loopback. The socket is made on a thread in the
// node's network namespace (an http.Client would dial on goroutines of its own, anywhere).
func healthInNetns(n *Node, port int) error {
	var conn net.Conn
	if err := inNetns(n, func() error {
		var err error
		conn, err = net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
		return err
	}); err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		return err
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if fields := strings.Fields(status); len(fields) < 2 || fields[1] != "200" {
		return fmt.Errorf("healthz on %s: %s", n.Name, strings.TrimSpace(status))
	}
	return nil
}

// StartAndWait starts d and waits until it serves.
func (s *Settings) StartAndWait(d Daemon, timeout time.Duration) error {
	if err := s.Start(d); err != nil {
		return err
	}
	if err := WaitFor(timeout, d.Name+" to serve", func() error {
		if s.Pid(d.Name, d.Binary) == 0 {
			return fmt.Errorf("%s exited:\n%s", d.Name, tail(d.LogFile, 30))
		}
		return s.ready(d)
	}); err != nil {
		return fmt.Errorf("%w\n--- last lines of %s:\n%s", err, d.LogFile, tail(d.LogFile, 30))
	}
	return nil
}
