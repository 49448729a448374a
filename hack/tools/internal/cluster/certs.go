package cluster

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// pkiParams is what the certificates bake in: if it changes, old serving certificates would
// silently lack the new addresses.
func (s *Settings) pkiParams() string {
	var b strings.Builder
	fmt.Fprintf(&b, "host-ip=%s service-ip=%s\n", s.HostIP, s.KubernetesServiceIP)
	for _, n := range s.AllNodes() {
		fmt.Fprintf(&b, "node=%s ip=%s\n", n.Name, n.IP)
	}
	return b.String()
}

// MakePKI makes the cluster's CAs, certificates and kubeconfigs (those that are missing).
func (s *Settings) MakePKI() error {
	p := PKI{Dir: s.PKIDir()}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	params := filepath.Join(p.Dir, "params")
	// Nodes may be added (their certificates are new), never changed: a changed host address
	// or service IP needs a purge.
	if old, err := os.ReadFile(params); err == nil && !strings.HasPrefix(s.pkiParams(), firstLine(string(old))) {
		return fmt.Errorf("cluster addresses changed since the PKI was made (%s); run hack/cluster/down.sh --purge first", firstLine(string(old)))
	}
	for _, ca := range []struct{ name, cn string }{
		{"ca", "hangar-cluster-ca"},
		// The aggregation layer authenticates to extension API servers with a client
		// certificate from a CA of its own, which they trust only for the request-header
		// identity, never for ordinary clients.
		{"front-proxy-ca", "hangar-front-proxy-ca"},
	} {
		if err := p.CA(ca.name, ca.cn); err != nil {
			return err
		}
	}
	apiserverNames := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + s.ClusterDomain, "localhost"}
	certs := []struct {
		name, ca string
		spec     CertSpec
	}{
		{"apiserver", "ca", CertSpec{CommonName: "kube-apiserver", Server: true, DNSNames: apiserverNames,
			IPs: []net.IP{s.HostIP.AsSlice(), s.KubernetesServiceIP.AsSlice(), net.IPv4(127, 0, 0, 1)}}},
		{"apiserver-kubelet-client", "ca", CertSpec{CommonName: "kube-apiserver-kubelet-client", Organizations: []string{"system:masters"}}},
		{"front-proxy-client", "front-proxy-ca", CertSpec{CommonName: "front-proxy-client"}},
		// kube-apiserver's identity when it calls admission webhooks (admissionConfig).
		{"webhook-client", "ca", CertSpec{CommonName: WebhookClientUser}},
		{"admin", "ca", CertSpec{CommonName: "hangar-admin", Organizations: []string{"system:masters"}}},
		{"controller-manager", "ca", CertSpec{CommonName: "system:kube-controller-manager"}},
		{"scheduler", "ca", CertSpec{CommonName: "system:kube-scheduler"}},
		{"kube-proxy", "ca", CertSpec{CommonName: "system:kube-proxy"}},
		{"registry", "ca", s.registryCert()},
	}
	for _, n := range s.AllNodes() {
		node := "system:node:" + n.Name
		certs = append(certs,
			struct {
				name, ca string
				spec     CertSpec
			}{n.Name + "-kubelet-client", "ca", CertSpec{CommonName: node, Organizations: []string{"system:nodes"}}},
			// Signed by the cluster CA, so kube-apiserver verifies the kubelet
			// (--kubelet-certificate-authority) for logs, exec and port-forward.
			struct {
				name, ca string
				spec     CertSpec
			}{n.Name + "-kubelet-serving", "ca", CertSpec{CommonName: node, Organizations: []string{"system:nodes"}, Server: true,
				DNSNames: []string{n.Name}, IPs: []net.IP{n.IP.AsSlice()}}},
		)
	}
	for _, c := range certs {
		if err := p.Cert(c.name, c.ca, c.spec); err != nil {
			return err
		}
	}
	if err := p.ServiceAccountKeys(); err != nil {
		return err
	}
	if err := writeFileAtomic(params, []byte(s.pkiParams()), 0o644); err != nil {
		return err
	}
	if err := s.writeKubeconfigs(p); err != nil {
		return err
	}
	return s.writeAdmissionConfig(p)
}

// WebhookClientUser is who kube-apiserver is when it calls virt-api's webhooks; Hangar's
// manifests grant that user the eviction webhook's path (ClusterRole hangar:webhook-caller),
// and the local overlay runs virt-api with --authorize-webhook-callers.
const WebhookClientUser = "kube-apiserver-webhook-client"

// AdmissionConfig is kube-apiserver's --admission-control-config-file.
func (s *Settings) AdmissionConfig() string { return filepath.Join(s.ConfigDir(), "admission.yaml") }

// writeAdmissionConfig gives kube-apiserver a client certificate for the webhooks of Services
// in Hangar's namespace (on port 443, which is what kube-apiserver's lookup without a port
// matches). Without one, kube-apiserver calls webhooks anonymously.
func (s *Settings) writeAdmissionConfig(p PKI) error {
	credentials := filepath.Join(s.ConfigDir(), "webhook-client.kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: "*.hangar.svc"
  user:
    client-certificate: %s
    client-key: %s
`, p.CertFile("webhook-client"), p.KeyFile("webhook-client"))
	if err := writeFileAtomic(credentials, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(s.AdmissionConfig(), []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, credentials)), 0o600)
}

func (s *Settings) writeKubeconfigs(p PKI) error {
	files := map[string]string{
		s.AdminKubeconfig(): "admin",
		filepath.Join(s.ConfigDir(), "controller-manager.kubeconfig"): "controller-manager",
		filepath.Join(s.ConfigDir(), "scheduler.kubeconfig"):          "scheduler",
		filepath.Join(s.ConfigDir(), "kube-proxy.kubeconfig"):         "kube-proxy",
	}
	for _, n := range s.AllNodes() {
		files[filepath.Join(n.ConfigDir(), "kubelet.kubeconfig")] = n.Name + "-kubelet-client"
	}
	for file, cert := range files {
		if err := s.writeKubeconfig(p, file, cert); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded) for cert.
func (s *Settings) writeKubeconfig(p PKI, file, cert string) error {
	data := map[string]string{}
	for key, path := range map[string]string{"ca": p.CertFile("ca"), "cert": p.CertFile(cert), "key": p.KeyFile(cert)} {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data[key] = base64.StdEncoding.EncodeToString(b)
	}
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: hangar
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: hangar
  context:
    cluster: hangar
    user: %s
current-context: hangar
`, s.APIServerURL(), data["ca"], cert, data["cert"], data["key"], cert)
	return writeFileAtomic(file, []byte(content), 0o600)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
