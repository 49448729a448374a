package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// The CA is due at 5h30, between two renewals of the certificates (every 2 h).
var testLifetimes = Lifetimes{CADuration: 10 * time.Hour, CARenewBefore: 4*time.Hour + 30*time.Minute,
	ServerDuration: 3 * time.Hour, ServerRenewBefore: time.Hour}

func request(now time.Time) Request {
	return Request{Now: now, Lifetimes: testLifetimes, EtcdServiceIP: net.ParseIP("10.218.0.42"), EtcdMembers: 1}
}

func leaf(t *testing.T, s Secrets, name string) *x509.Certificate {
	t.Helper()
	certs, err := ParseCertificates(s[name][KeyCert])
	require.NoError(t, err, name)
	return certs[0]
}

// verifies checks a certificate against the bundle its Secret carries, at a time.
func verifies(t *testing.T, s Secrets, name string, usage x509.ExtKeyUsage, at time.Time) error {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s[name][KeyCA]), name)
	_, err := leaf(t, s, name).Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestReconcileIssuesEverythingOnce(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s, next, err := Reconcile(nil, request(now))
	require.NoError(t, err)
	for _, name := range []string{HangarCA, EtcdCA, EtcdPeerCA, MigrationCA, VirtAPITLS, VirtHandlerTLS, VirtAPIHandlerClient,
		EtcdServer, EtcdPeer, VirtAPIEtcdClient, MigrationCABundle, EncryptionSecret} {
		assert.NotEmpty(t, s[name], name)
	}
	assert.Equal(t, now.Add(2*time.Hour), next, "the certificates' renewal comes first")
	require.NoError(t, verifies(t, s, VirtAPITLS, x509.ExtKeyUsageServerAuth, now))
	require.NoError(t, verifies(t, s, VirtAPIEtcdClient, x509.ExtKeyUsageClientAuth, now))
	assert.Error(t, verifies(t, Secrets{VirtAPIEtcdClient: {KeyCert: s[VirtAPIEtcdClient][KeyCert], KeyCA: s[HangarCA][KeyBundle]}},
		VirtAPIEtcdClient, x509.ExtKeyUsageClientAuth, now), "etcd's CA signs nothing of the other CAs'")
	assert.Contains(t, leaf(t, s, EtcdServer).IPAddresses[1].String(), "10.218.0.42")
	assert.Empty(t, leaf(t, s, VirtAPIEtcdClient).DNSNames, "client certificates name no host")
	assert.Equal(t, s[MigrationCA][KeyBundle], s[MigrationCABundle][KeyCA])

	again, _, err := Reconcile(s, request(now.Add(time.Minute)))
	require.NoError(t, err)
	assert.Equal(t, s, again, "nothing changes before a renewal is due")
}

func TestReconcileRenewsCertificates(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s, _, err := Reconcile(nil, request(now))
	require.NoError(t, err)
	later := now.Add(2*time.Hour + time.Second)
	renewed, _, err := Reconcile(s, request(later))
	require.NoError(t, err)
	assert.Equal(t, s[HangarCA], renewed[HangarCA], "the CA stays")
	assert.NotEqual(t, s[VirtAPITLS][KeyCert], renewed[VirtAPITLS][KeyCert])
	assert.Equal(t, s[EncryptionSecret], renewed[EncryptionSecret], "the encryption key is never replaced")
	require.NoError(t, verifies(t, renewed, VirtAPITLS, x509.ExtKeyUsageServerAuth, later))

	// A Service recreated with another address: etcd's serving certificate follows.
	moved := request(later)
	moved.EtcdServiceIP = net.ParseIP("10.218.0.43")
	again, _, err := Reconcile(renewed, moved)
	require.NoError(t, err)
	assert.NotEqual(t, renewed[EtcdServer][KeyCert], again[EtcdServer][KeyCert])
	assert.Equal(t, renewed[VirtAPITLS][KeyCert], again[VirtAPITLS][KeyCert])
}

// A CA is renewed with no moment where a consumer would refuse a certificate: the new CA is
// first only trusted (the bundle has both), then issues, and the old one leaves the bundle
// once nothing it signed is valid.
func TestReconcileRotatesCAs(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s, _, err := Reconcile(nil, request(start))
	require.NoError(t, err)
	oldCA := s[HangarCA][KeyCert]

	// The CA's renewal is due at 5h30; the certificates were renewed along the way.
	at := start
	for at.Before(start.Add(5*time.Hour + 30*time.Minute)) {
		var next time.Time
		s, next, err = Reconcile(s, request(at))
		require.NoError(t, err)
		at = next
	}
	require.Equal(t, start.Add(5*time.Hour+30*time.Minute), at)
	rotated, next, err := Reconcile(s, request(at))
	require.NoError(t, err)
	assert.NotEqual(t, oldCA, rotated[HangarCA][KeyCert], "a new CA")
	bundle, err := ParseCertificates(rotated[HangarCA][KeyBundle])
	require.NoError(t, err)
	assert.Len(t, bundle, 2, "both CAs are trusted")
	assert.Equal(t, s[VirtAPITLS][KeyCert], rotated[VirtAPITLS][KeyCert], "certificates wait until the new bundle has spread")
	assert.Equal(t, rotated[HangarCA][KeyBundle], rotated[VirtAPITLS][KeyCA])
	assert.NotEqual(t, TrustHashes(s)["virt-api"], TrustHashes(rotated)["virt-api"], "virt-api rolls to read the new bundle")
	require.NoError(t, verifies(t, rotated, VirtAPITLS, x509.ExtKeyUsageServerAuth, at))

	usable := at.Add(testLifetimes.propagation())
	assert.True(t, !next.After(usable), "looked at again once the new CA may issue")
	issued, _, err := Reconcile(rotated, request(usable))
	require.NoError(t, err)
	assert.NotEqual(t, rotated[VirtAPITLS][KeyCert], issued[VirtAPITLS][KeyCert])
	assert.NoError(t, leaf(t, issued, VirtAPITLS).CheckSignatureFrom(mustCA(t, issued[HangarCA]).Cert), "issued by the new CA")

	// The old CA expires at 10 h; then it leaves the bundle.
	pruned, _, err := Reconcile(issued, request(start.Add(10*time.Hour)))
	require.NoError(t, err)
	bundle, err = ParseCertificates(pruned[HangarCA][KeyBundle])
	require.NoError(t, err)
	assert.Len(t, bundle, 1)
}

func mustCA(t *testing.T, data map[string][]byte) *CA {
	t.Helper()
	ca, err := ParseCA(data[KeyCert], data[KeyKey])
	require.NoError(t, err)
	return ca
}

func TestLifetimesValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Lifetimes
		err  string
	}{
		{name: "defaults", l: LifetimesFrom(operatorv1alpha1.CertificateRotateStrategy{})},
		{name: "renew after the end", l: Lifetimes{CADuration: 10 * time.Hour, CARenewBefore: 4 * time.Hour,
			ServerDuration: time.Hour, ServerRenewBefore: 2 * time.Hour}, err: "server: renewBefore"},
		{name: "a CA renewed too late for its certificates", l: Lifetimes{CADuration: 10 * time.Hour, CARenewBefore: time.Hour,
			ServerDuration: 3 * time.Hour, ServerRenewBefore: time.Hour}, err: "ca.renewBefore must be longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// Shortened lifetimes apply at once: what outlives them is renewed, through the same steps as
// a renewal that is due.
func TestReconcileShortenedLifetimes(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	long := request(now)
	long.Lifetimes = LifetimesFrom(operatorv1alpha1.CertificateRotateStrategy{})
	s, _, err := Reconcile(nil, long)
	require.NoError(t, err)

	short := request(now.Add(time.Minute))
	renewed, next, err := Reconcile(s, short)
	require.NoError(t, err)
	assert.NotEqual(t, s[HangarCA][KeyCert], renewed[HangarCA][KeyCert], "the 7-day CA outlives a 10-hour strategy")
	assert.Equal(t, s[VirtAPITLS][KeyCert], renewed[VirtAPITLS][KeyCert], "certificates wait for the new CA's bundle")
	issued, _, err := Reconcile(renewed, request(next))
	require.NoError(t, err)
	cert := leaf(t, issued, VirtAPITLS)
	assert.False(t, cert.NotAfter.After(next.Add(testLifetimes.ServerDuration)), "a certificate of the short strategy")
	require.NoError(t, verifies(t, issued, VirtAPITLS, x509.ExtKeyUsageServerAuth, next))
}

// TestEncryptionConfigGainsGroups: a configuration made before virt-api stored
// instancetype.kubevirt.io, snapshot.kubevirt.io, clone.kubevirt.io and export.kubevirt.io gets the groups in order, under the same key;
// one that has them is unchanged.
func TestEncryptionConfigGainsGroups(t *testing.T) {
	old := []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources:
  - "*.kubevirt.io"
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: c2VjcmV0
  - identity: {}
`)
	got, err := encryptionConfig(map[string][]byte{KeyEncryption: old})
	require.NoError(t, err)
	upgraded := string(got[KeyEncryption])
	assert.Contains(t, upgraded, "  - \"*.kubevirt.io\"\n  - \"*.instancetype.kubevirt.io\"\n  - \"*.snapshot.kubevirt.io\"\n  - \"*.clone.kubevirt.io\"\n  - \"*.export.kubevirt.io\"\n  providers:")
	assert.Contains(t, upgraded, "secret: c2VjcmV0", "the key stays")

	again, err := encryptionConfig(got)
	require.NoError(t, err)
	assert.Equal(t, upgraded, string(again[KeyEncryption]), "applied once")

	fresh, err := encryptionConfig(nil)
	require.NoError(t, err)
	assert.Contains(t, string(fresh[KeyEncryption]), `"*.instancetype.kubevirt.io"`)

	foreign := []byte("resources:\n- resources: ['*.*']\n")
	kept, err := encryptionConfig(map[string][]byte{KeyEncryption: foreign})
	require.NoError(t, err)
	assert.Equal(t, foreign, kept[KeyEncryption], "a configuration not in the operator's format is left alone")
}
