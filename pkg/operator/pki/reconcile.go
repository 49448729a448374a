package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// Keys of the Secrets' data. CA Secrets hold the current CA as tls.crt and tls.key (virt-controller
// signs with the migration CA's) and every CA still trusted as ca-bundle.crt; certificates hold
// tls.crt, tls.key and their issuer's bundle as ca.crt, which their consumers trust.
const (
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
	KeyCA     = "ca.crt"
	KeyBundle = "ca-bundle.crt"
	// KeyEncryption is virt-api's EncryptionConfiguration in the Secret EncryptionSecret.
	KeyEncryption = "encryption-config.yaml"
)

// Names of the CA Secrets.
const (
	HangarCA    = "hangar-ca"
	EtcdCA      = "hangar-etcd-ca"
	EtcdPeerCA  = "hangar-etcd-peer-ca"
	MigrationCA = "hangar-migration-ca"
)

// Names of the other Secrets, as the component manifests mount them.
const (
	VirtAPITLS            = "virt-api-tls"
	VirtHandlerTLS        = "virt-handler-tls"
	VirtAPIHandlerClient  = "virt-api-handler-client"
	EtcdServer            = "hangar-etcd-server"
	EtcdPeer              = "hangar-etcd-peer"
	VirtAPIEtcdClient     = "virt-api-etcd-client"
	MigrationCABundle     = "hangar-migration-ca-bundle"
	EncryptionSecret      = "virt-api-encryption"
	virtAPIServiceDNSName = "virt-api.hangar.svc"
)

// Lifetimes are the certificateRotateStrategy of the Hangar object, defaulted as KubeVirt's:
// CAs for 7 days, renewed 2 days before their end; certificates for a day, renewed 12 hours
// before theirs.
type Lifetimes struct {
	CADuration, CARenewBefore         time.Duration
	ServerDuration, ServerRenewBefore time.Duration
}

// LifetimesFrom defaults a certificateRotateStrategy.
func LifetimesFrom(s operatorv1alpha1.CertificateRotateStrategy) Lifetimes {
	l := Lifetimes{CADuration: 7 * 24 * time.Hour, CARenewBefore: 2 * 24 * time.Hour,
		ServerDuration: 24 * time.Hour, ServerRenewBefore: 12 * time.Hour}
	if s.SelfSigned == nil {
		return l
	}
	set := func(c *operatorv1alpha1.CertConfig, duration, renew *time.Duration) {
		if c == nil {
			return
		}
		if c.Duration != nil {
			*duration = c.Duration.Duration
		}
		if c.RenewBefore != nil {
			*renew = c.RenewBefore.Duration
		}
	}
	set(s.SelfSigned.CA, &l.CADuration, &l.CARenewBefore)
	set(s.SelfSigned.Server, &l.ServerDuration, &l.ServerRenewBefore)
	return l
}

// Validate refuses lifetimes that cannot rotate without a gap: a certificate must be renewed
// before its end, and a CA must outlive the certificates it issues by their renewal margin.
func (l Lifetimes) Validate() error {
	switch {
	case l.ServerRenewBefore <= 0 || l.ServerRenewBefore >= l.ServerDuration:
		return fmt.Errorf("spec.certificateRotateStrategy.selfSigned.server: renewBefore must be positive and shorter than duration")
	case l.CARenewBefore <= 0 || l.CARenewBefore >= l.CADuration:
		return fmt.Errorf("spec.certificateRotateStrategy.selfSigned.ca: renewBefore must be positive and shorter than duration")
	case l.CARenewBefore <= l.ServerDuration-l.ServerRenewBefore:
		return fmt.Errorf("spec.certificateRotateStrategy.selfSigned.ca.renewBefore must be longer than a certificate's time before its renewal (%s)",
			l.ServerDuration-l.ServerRenewBefore)
	}
	return nil
}

// propagation is how long a new CA is only trusted before certificates are issued by it:
// long enough for the kubelets to update the bundles in the pods' Secret volumes and for the
// components that read them at start to roll.
func (l Lifetimes) propagation() time.Duration {
	return min(3*time.Minute, l.CARenewBefore/4)
}

// Secrets are Secret data by Secret name.
type Secrets map[string]map[string][]byte

// Request is what the certificates depend on besides the Secrets that exist.
type Request struct {
	Now       time.Time
	Lifetimes Lifetimes
	// EtcdServiceIP is the hangar-etcd Service's ClusterIP, which virt-api dials.
	EtcdServiceIP net.IP
	// EtcdMembers is the number of etcd members.
	EtcdMembers int
}

// leafSpec is one certificate Secret and what it certifies.
type leafSpec struct {
	secret, ca string
	leaf       func(Request) Leaf
}

var caSecrets = []string{HangarCA, EtcdCA, EtcdPeerCA, MigrationCA}

var leafSecrets = []leafSpec{
	{VirtAPITLS, HangarCA, func(Request) Leaf {
		return Leaf{CommonName: virtAPIServiceDNSName, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames: []string{virtAPIServiceDNSName, virtAPIServiceDNSName + ".cluster.local", "virt-api.hangar", "virt-api"}}
	}},
	// The handlers admit virt-api's client certificate with this Secret's CA. They serve virt-api
	// with their nodes' own identities (virt-controller's signer hangarvm.io/migration), which
	// virt-api requires; the key pair here serves nobody any more.
	{VirtHandlerTLS, HangarCA, func(Request) Leaf {
		return Leaf{CommonName: "virt-handler", DNSNames: []string{"virt-handler"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	}},
	{VirtAPIHandlerClient, HangarCA, func(Request) Leaf {
		return Leaf{CommonName: "virt-api", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}},
	{EtcdServer, EtcdCA, func(r Request) Leaf {
		dns := []string{"hangar-etcd", "hangar-etcd.hangar", "hangar-etcd.hangar.svc", "hangar-etcd.hangar.svc.cluster.local", "localhost"}
		ips := []net.IP{net.ParseIP("127.0.0.1")}
		if r.EtcdServiceIP != nil {
			ips = append(ips, r.EtcdServiceIP)
		}
		return Leaf{CommonName: "hangar-etcd", DNSNames: append(dns, etcdMembers(r)...), IPs: ips,
			Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	}},
	// A member serves and dials the peer port with the same certificate.
	{EtcdPeer, EtcdPeerCA, func(r Request) Leaf {
		return Leaf{CommonName: "hangar-etcd-peer", DNSNames: etcdMembers(r),
			Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	}},
	// No names: etcd checks a client certificate's names against the connecting address.
	{VirtAPIEtcdClient, EtcdCA, func(Request) Leaf {
		return Leaf{CommonName: "virt-api", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}},
}

func etcdMembers(r Request) []string {
	var names []string
	for i := range max(r.EtcdMembers, 1) {
		member := fmt.Sprintf("hangar-etcd-%d.hangar-etcd-peers.hangar.svc", i)
		names = append(names, member, member+".cluster.local")
	}
	return names
}

// Reconcile returns the data every Secret of the PKI should hold, given what they hold now,
// and when it must be looked at again (a certificate or CA to renew, a new CA that may now
// issue, an old one to drop from the bundles). Secrets that need no change come back as they
// are, so a caller writes only those that differ.
func Reconcile(existing Secrets, r Request) (Secrets, time.Time, error) {
	if err := r.Lifetimes.Validate(); err != nil {
		return nil, time.Time{}, err
	}
	out := Secrets{}
	next := r.Now.Add(r.Lifetimes.ServerDuration)
	soonest := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	cas := map[string]*CA{}
	for _, name := range caSecrets {
		data, ca, err := reconcileCA(name, existing[name], r, soonest)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", name, err)
		}
		out[name], cas[name] = data, ca
	}
	for _, spec := range leafSecrets {
		data, err := reconcileLeaf(spec, existing[spec.secret], cas[spec.ca], out[spec.ca][KeyBundle], r, soonest)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", spec.secret, err)
		}
		out[spec.secret] = data
	}
	out[MigrationCABundle] = map[string][]byte{KeyCA: out[MigrationCA][KeyBundle]}
	enc, err := encryptionConfig(existing[EncryptionSecret])
	if err != nil {
		return nil, time.Time{}, err
	}
	out[EncryptionSecret] = enc
	return out, next, nil
}

// reconcileCA keeps the current CA until it is due for renewal, then makes a new one; the
// bundle holds the current CA first and every earlier one that has not expired.
func reconcileCA(name string, data map[string][]byte, r Request, soonest func(time.Time)) (map[string][]byte, *CA, error) {
	current, err := ParseCA(data[KeyCert], data[KeyKey])
	renewAt := time.Time{}
	if err == nil {
		renewAt = current.Cert.NotAfter.Add(-r.Lifetimes.CARenewBefore)
	}
	// A CA that outlives what the strategy allows now (its durations were shortened) is
	// renewed too, so that a shorter strategy applies at once.
	if err != nil || !r.Now.Before(renewAt) || current.Cert.NotAfter.After(r.Now.Add(r.Lifetimes.CADuration)) {
		if current, err = NewCA(name, r.Now, r.Lifetimes.CADuration); err != nil {
			return nil, nil, err
		}
		renewAt = current.Cert.NotAfter.Add(-r.Lifetimes.CARenewBefore)
	}
	soonest(renewAt)
	bundle := slices.Clone(current.CertPEM)
	if old, err := ParseCertificates(data[KeyBundle]); err == nil {
		for _, c := range old {
			if c.Equal(current.Cert) || !r.Now.Before(c.NotAfter) {
				continue
			}
			soonest(c.NotAfter) // dropped from the bundle then
			bundle = append(bundle, encode("CERTIFICATE", c.Raw)...)
		}
	}
	return map[string][]byte{KeyCert: current.CertPEM, KeyKey: current.KeyPEM, KeyBundle: bundle}, current, nil
}

// reconcileLeaf keeps a certificate while it is the current CA's (or the CA is too new to
// issue: its bundle may not have reached every consumer yet), names what it should, is not
// due for renewal and does not outlive the strategy's duration; otherwise it issues a new one.
// ca.crt is always the CA's bundle.
func reconcileLeaf(spec leafSpec, data map[string][]byte, ca *CA, bundle []byte, r Request, soonest func(time.Time)) (map[string][]byte, error) {
	want := spec.leaf(r)
	keep := false
	if certs, err := ParseCertificates(data[KeyCert]); err == nil && len(data[KeyKey]) > 0 {
		cert := certs[0]
		renewAt := cert.NotAfter.Add(-r.Lifetimes.ServerRenewBefore)
		issuedByCurrent := cert.CheckSignatureFrom(ca.Cert) == nil
		caUsableAt := ca.Cert.NotBefore.Add(backdate + r.Lifetimes.propagation())
		outlives := cert.NotAfter.After(r.Now.Add(r.Lifetimes.ServerDuration))
		switch {
		case !names(cert, want), !r.Now.Before(renewAt):
		case issuedByCurrent && !outlives:
			keep = true
			soonest(renewAt)
		case !issuedByCurrent && r.Now.Before(caUsableAt):
			// Signed by the previous CA, which every consumer still trusts, while the new
			// one's bundle spreads.
			keep = true
			soonest(caUsableAt)
		}
	}
	if keep {
		return map[string][]byte{KeyCert: data[KeyCert], KeyKey: data[KeyKey], KeyCA: bundle}, nil
	}
	certPEM, keyPEM, err := ca.Issue(want, r.Now, r.Lifetimes.ServerDuration)
	if err != nil {
		return nil, err
	}
	cert, _ := ParseCertificates(certPEM)
	soonest(cert[0].NotAfter.Add(-r.Lifetimes.ServerRenewBefore))
	return map[string][]byte{KeyCert: certPEM, KeyKey: keyPEM, KeyCA: bundle}, nil
}

// names says whether a certificate certifies what want asks.
func names(c *x509.Certificate, want Leaf) bool {
	if c.Subject.CommonName != want.CommonName || !slices.Equal(c.DNSNames, want.DNSNames) || len(c.IPAddresses) != len(want.IPs) {
		return false
	}
	for i, ip := range want.IPs {
		if !c.IPAddresses[i].Equal(ip) {
			return false
		}
	}
	return slices.Equal(c.ExtKeyUsage, want.Usages)
}

// encryptionConfig is virt-api's encryption at rest: a random secretbox key, made once and
// never replaced (what was written with a key cannot be read without it).
func encryptionConfig(data map[string][]byte) (map[string][]byte, error) {
	if existing := data[KeyEncryption]; len(existing) > 0 {
		return map[string][]byte{KeyEncryption: withEncryptedGroups(existing)}, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`# virt-api's encryption at rest (k8s.io/apiserver --encryption-provider-config), made by
# hangar-operator. identity reads objects written before encryption.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources:
  - "*.kubevirt.io"
  - "*.instancetype.kubevirt.io"
  - "*.snapshot.kubevirt.io"
  - "*.clone.kubevirt.io"
  - "*.export.kubevirt.io"
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: %s
  - identity: {}
`, base64.StdEncoding.EncodeToString(key))
	return map[string][]byte{KeyEncryption: []byte(config)}, nil
}

// encryptedGroupLines are the resource lines of the configuration, each a group virt-api
// stores; virt-api refuses to start when a group it stores is not named.
var encryptedGroupLines = []string{`  - "*.kubevirt.io"`, `  - "*.instancetype.kubevirt.io"`, `  - "*.snapshot.kubevirt.io"`, `  - "*.clone.kubevirt.io"`, `  - "*.export.kubevirt.io"`}

// withEncryptedGroups adds to a configuration made by an earlier version the groups virt-api
// has stored since (instancetype.kubevirt.io, snapshot.kubevirt.io, clone.kubevirt.io, export.kubevirt.io), under the same key and providers: the
// configuration is kept, only its list of resources grows. The configuration is the
// operator's own (the format above), so the lines are found as written.
func withEncryptedGroups(config []byte) []byte {
	text := string(config)
	first := encryptedGroupLines[0] + "\n"
	if !strings.Contains(text, first) {
		return config // not ours: left as it is, and virt-api says what it lacks
	}
	// Each missing line goes after the one before it, so the lines keep their order.
	after := first
	for _, line := range encryptedGroupLines[1:] {
		if !strings.Contains(text, line+"\n") {
			text = strings.Replace(text, after, after+line+"\n", 1)
		}
		after = line + "\n"
	}
	return []byte(text)
}

// TrustHashes are the hashes of the CA bundles that components read only at start, by the
// workload they restart: virt-api (the handlers' CA, etcd's CA), etcd (its client and peer
// CAs) and virt-controller (the migration CA it signs with). virt-handler reads its bundles
// at every handshake and needs no restart.
func TrustHashes(s Secrets) map[string]string {
	hash := func(parts ...[]byte) string {
		h := sha256.Sum256(bytes.Join(parts, []byte{0}))
		return hex.EncodeToString(h[:8])
	}
	return map[string]string{
		"virt-api":        hash(s[HangarCA][KeyBundle], s[EtcdCA][KeyBundle]),
		"hangar-etcd":     hash(s[EtcdCA][KeyBundle], s[EtcdPeerCA][KeyBundle]),
		"virt-controller": hash(s[MigrationCA][KeyCert]),
	}
}

// SecretType is the type of a Secret of the PKI: kubernetes.io/tls for those with a key pair.
func SecretType(name string) string {
	switch name {
	case MigrationCABundle, EncryptionSecret:
		return "Opaque"
	}
	return "kubernetes.io/tls"
}
