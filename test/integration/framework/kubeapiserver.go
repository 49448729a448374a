package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hangarvm/hangar/pkg/etcd"
)

// KubeAPIServer is a real kube-apiserver process (built by hack/cluster/build.sh) on a fresh
// embedded etcd, with the aggregation layer configured as in a cluster.
type KubeAPIServer struct {
	// Dir holds the PKI, the kubeconfigs and the log.
	Dir string
	// URL is the server's address.
	URL string
	// CA signs the serving certificate and every client certificate the server accepts.
	CA *CA
	// FrontProxyCA signs FrontProxyClient, the certificate kube-apiserver presents to
	// aggregated servers (--requestheader-client-ca-file, --proxy-client-cert-file).
	FrontProxyCA     *CA
	FrontProxyClient *KeyPair
	// Admin is a cluster admin (system:masters).
	Admin *rest.Config
	// Kube is a clientset for Admin.
	Kube kubernetes.Interface

	etcd *etcd.Server
	cmd  *exec.Cmd
	done chan error

	stopControllerManager func()
}

// RepoRoot is the checkout this package lives in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BinaryPath finds a binary built by hack/cluster/build.sh: $HANGAR_BIN_DIR or _output/bin.
func BinaryPath(name string) (string, error) {
	dir := os.Getenv("HANGAR_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "_output", "bin")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found (%w): build it with hack/cluster/build.sh", path, err)
	}
	return path, nil
}

// StartKubeAPIServer starts etcd and kube-apiserver in dir and waits until it is ready.
// kube-apiserver calls webhooks of virt-api's Service on webhookPort with a client certificate.
func StartKubeAPIServer(dir string, webhookPort int) (*KubeAPIServer, error) {
	binary, err := BinaryPath("kube-apiserver")
	if err != nil {
		return nil, err
	}
	s := &KubeAPIServer{Dir: dir}
	if s.etcd, err = etcd.Start(etcd.Config{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: !EtcdFsync}); err != nil {
		return nil, err
	}
	args, err := s.prepare(webhookPort)
	if err != nil {
		s.Stop()
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// The server must not outlive a test binary killed by a timeout.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		s.Stop()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait(); logFile.Close() }()

	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("kube-apiserver not ready (log in %s): %w", logFile.Name(), err)
	}
	return s, nil
}

// Pid is the kube-apiserver process's id.
func (s *KubeAPIServer) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// prepare writes the PKI and returns kube-apiserver's flags.
func (s *KubeAPIServer) prepare(webhookPort int) ([]string, error) {
	var err error
	if s.CA, err = NewCA(s.Dir, "cluster"); err != nil {
		return nil, err
	}
	if s.FrontProxyCA, err = NewCA(s.Dir, "front-proxy"); err != nil {
		return nil, err
	}
	serving, err := s.CA.ServingCert("kube-apiserver", []string{"localhost", "kubernetes.default.svc"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, err
	}
	if s.FrontProxyClient, err = s.FrontProxyCA.ClientCert("front-proxy-client", "front-proxy-client"); err != nil {
		return nil, err
	}
	saKey, saPub, err := writeServiceAccountKey(s.Dir)
	if err != nil {
		return nil, err
	}
	admissionConfig, err := s.writeAdmissionConfig(webhookPort)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	if s.Admin, err = s.UserConfig("hangar-test-admin", "system:masters"); err != nil {
		return nil, err
	}
	if s.Kube, err = kubernetes.NewForConfig(s.Admin); err != nil {
		return nil, err
	}
	return []string{
		"--etcd-servers=" + s.etcd.ClientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + serving.CertFile,
		"--tls-private-key-file=" + serving.KeyFile,
		"--client-ca-file=" + s.CA.CertFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// Endpoints reject loopback addresses; nothing here needs the kubernetes Service.
		"--endpoint-reconciler-type=none",
		// The aggregation layer, as ENVIRONMENT.md measured it.
		"--requestheader-client-ca-file=" + s.FrontProxyCA.CertFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + s.FrontProxyClient.CertFile,
		"--proxy-client-key-file=" + s.FrontProxyClient.KeyFile,
		"--admission-control-config-file=" + admissionConfig,
		// /debug/pprof only for a benchmark that profiles (KubeAPIServerProfiling).
		"--profiling=" + strconv.FormatBool(KubeAPIServerProfiling),
	}, nil
}

// WebhookClientUser is who kube-apiserver is when it calls virt-api's webhooks, as in the
// local cluster (hack/cluster): artifacts/ grant that user the eviction webhook's path.
const WebhookClientUser = "kube-apiserver-webhook-client"

// writeAdmissionConfig gives kube-apiserver a client certificate for calling webhooks of
// virt-api's Service on port and returns the --admission-control-config-file.
func (s *KubeAPIServer) writeAdmissionConfig(port int) (string, error) {
	cert, err := s.CA.ClientCert("webhook-client", WebhookClientUser)
	if err != nil {
		return "", err
	}
	credentials := clientcmdapi.NewConfig()
	// Keyed by host and port: kube-apiserver looks a host up without its port only for 443.
	host := net.JoinHostPort(virtAPIService+"."+virtAPINamespace+".svc", strconv.Itoa(port))
	credentials.AuthInfos[host] = &clientcmdapi.AuthInfo{
		ClientCertificate: cert.CertFile, ClientKey: cert.KeyFile}
	kubeconfig := filepath.Join(s.Dir, "webhook-client.kubeconfig")
	if err := clientcmd.WriteToFile(*credentials, kubeconfig); err != nil {
		return "", err
	}
	config := filepath.Join(s.Dir, "admission.yaml")
	return config, os.WriteFile(config, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: `+kubeconfig+"\n"), 0o600)
}

// EtcdFsync makes the etcds started after it is set (kube-apiserver's and virt-api's
// embedded one) sync their writes to disk, as a production etcd does; tests run without, for
// speed, and so do the throughput benchmarks, comparing like with like.
var EtcdFsync bool

// KubeAPIServerProfiling serves /debug/pprof in the kube-apiservers started after it is set:
// a benchmark's profiles of a create include kube-apiserver's half.
var KubeAPIServerProfiling bool

func (s *KubeAPIServer) waitReady() error {
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true,
		func(ctx context.Context) (bool, error) {
			select {
			case err := <-s.done:
				s.done <- err
				return false, fmt.Errorf("kube-apiserver exited: %v", err)
			default:
			}
			body, err := s.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil && string(body) == "ok", nil
		})
}

// UserConfig returns a client config for a user with the given groups, by client certificate.
func (s *KubeAPIServer) UserConfig(user string, groups ...string) (*rest.Config, error) {
	kp, err := s.CA.ClientCert("user-"+user, user, groups...)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            s.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CA.PEM, CertData: kp.CertPEM, KeyData: kp.KeyPEM},
		QPS:             -1,
	}, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file, for kubectl and for servers' flags.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	return clientcmd.WriteToFile(*kc, path)
}

// Stop stops kube-apiserver (it drains watches for a minute on SIGTERM, so it gets little
// time before SIGKILL) and etcd.
func (s *KubeAPIServer) Stop() {
	if s.stopControllerManager != nil {
		s.stopControllerManager()
		s.stopControllerManager = nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(3 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		s.cmd = nil
	}
	if s.etcd != nil {
		s.etcd.Stop()
		s.etcd = nil
	}
}

// FreePort returns a loopback port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
