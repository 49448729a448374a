package integration

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// encryptedPrefix starts every value the configuration below encrypts (kube's
// k8s:enc:<provider>:v1:<key name>:).
const encryptedPrefix = "k8s:enc:secretbox:v1:key1:"

// writeEncryptionConfig writes an EncryptionConfiguration like the operator's (pkg/operator/pki): a
// random secretbox key for Hangar's three stored resources, identity to read older data.
func writeEncryptionConfig(t *testing.T, dir string) string {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	path := filepath.Join(dir, "encryption-config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources:
  - virtualmachines.kubevirt.io
  - virtualmachineinstances.kubevirt.io
  - virtualmachineinstancereplicasets.kubevirt.io
  - virtualmachineinstancemigrations.kubevirt.io
  - "*.instancetype.kubevirt.io"
  - "*.snapshot.kubevirt.io"
  - "*.clone.kubevirt.io"
  - "*.export.kubevirt.io"
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: `+base64.StdEncoding.EncodeToString(key)+`
  - identity: {}
`), 0o600))
	return path
}

// withUserData is a spec whose cloud-init user data carries secret.
func withUserData(secret string) v1.VirtualMachineInstanceSpec {
	spec := guest()
	spec.Volumes = append(spec.Volumes, v1.Volume{Name: "cloudinit", VolumeSource: v1.VolumeSource{
		CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config\npassword: " + secret + "\n"}}})
	return spec
}

// rawEtcd is a plain etcd client, as an attacker or an admin with etcdctl would use.
func rawEtcd(t *testing.T, endpoint string, tlsConfig *tls.Config) *clientv3.Client {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// etcdClientTLS is the TLS configuration of a client with a certificate of etcd's CA, as
// virt-api and an operator's etcdctl have.
func etcdClientTLS(t *testing.T, etcd *framework.TLSEtcd) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(etcd.CA.PEM))
	clientCert, err := tls.X509KeyPair(etcd.Client.CertPEM, etcd.Client.KeyPEM)
	require.NoError(t, err)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}}
}

// TestEtcdMutualTLSAndEncryptionAtRest runs virt-api as deployed: its etcd admits only
// clients with a certificate of the etcd CA, and Hangar's objects are encrypted before they
// reach etcd (k8s.io/apiserver's --encryption-provider-config). The flags are the
// deployment's (artifacts/components/virt-api.yaml).
func TestEtcdMutualTLSAndEncryptionAtRest(t *testing.T) {
	ctx := context.Background()
	etcd := framework.StartTLSEtcd(t)
	encryptionConfig := writeEncryptionConfig(t, t.TempDir())
	encrypt := false
	api := framework.StartVirtAPIWith(t, func(o *virtapi.Options) {
		o.EmbeddedEtcdDir = ""
		args := []string{"--etcd-servers=" + etcd.URL, "--etcd-cafile=" + etcd.CA.CertFile,
			"--etcd-certfile=" + etcd.Client.CertFile, "--etcd-keyfile=" + etcd.Client.KeyFile}
		if encrypt {
			args = append(args, "--encryption-provider-config="+encryptionConfig)
		}
		fs := pflag.NewFlagSet("virt-api", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(args))
	})

	adminTLS := etcdClientTLS(t, etcd)
	roots := adminTLS.RootCAs
	admin := rawEtcd(t, etcd.URL, adminTLS)
	raw := func(t *testing.T, resource, ns, name string) string {
		t.Helper()
		resp, err := admin.Get(ctx, "/hangar/kubevirt.io/"+resource+"/"+ns+"/"+name)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1, "%s %s/%s is in etcd", resource, ns, name)
		return string(resp.Kvs[0].Value)
	}

	// Written before encryption was turned on: stored in plaintext, as in a deployment that
	// predates it.
	const ns = "etcd-tls"
	const oldSecret = "hangar-old-password-9f2c"
	vms := api.Client.KubevirtV1().VirtualMachines(ns)
	old := newVM("before", v1.RunStrategyHalted)
	old.Spec.Template.Spec = withUserData(oldSecret)
	_, err := vms.Create(ctx, old, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Contains(t, raw(t, "virtualmachines", ns, "before"), oldSecret, "without encryption the user data is in etcd as written")

	encrypt = true
	api.Restart(t)

	const secret = "hangar-user-password-3b7e"
	vmi := newVMI("with-userdata")
	vmi.Spec = withUserData(secret)
	_, err = api.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{})
	require.NoError(t, err)
	vm := newVM("with-userdata", v1.RunStrategyHalted)
	vm.Spec.Template.Spec = withUserData(secret)
	_, err = vms.Create(ctx, vm, metav1.CreateOptions{})
	require.NoError(t, err)
	rs := newReplicaSet("with-userdata", 0)
	rs.Spec.Template.Spec = withUserData(secret)
	_, err = api.Client.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("stored encrypted", func(t *testing.T) {
		for _, resource := range []string{"virtualmachineinstances", "virtualmachines", "virtualmachineinstancereplicasets"} {
			value := raw(t, resource, ns, "with-userdata")
			assert.True(t, strings.HasPrefix(value, encryptedPrefix), "%s: stored value starts with %q", resource, value[:min(len(value), 40)])
			assert.NotContains(t, value, secret, "%s: user data in plaintext", resource)
			assert.NotContains(t, value, "with-userdata", "%s: the object in plaintext", resource)
		}
	})

	t.Run("virt-api reads them back", func(t *testing.T) {
		got, err := api.Client.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "with-userdata", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, got.Spec.Volumes, 2)
		assert.Contains(t, got.Spec.Volumes[1].CloudInitNoCloud.UserData, secret)
	})

	t.Run("older plaintext objects stay readable and are encrypted when rewritten", func(t *testing.T) {
		got, err := vms.Get(ctx, "before", metav1.GetOptions{})
		require.NoError(t, err, "identity, the configuration's last provider, reads data written before encryption")
		assert.Contains(t, got.Spec.Template.Spec.Volumes[1].CloudInitNoCloud.UserData, oldSecret)
		// An update without changes rewrites the object (the read reported it stale):
		// `kubectl replace` of every object is how data is moved to a new key.
		_, err = vms.Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err)
		value := raw(t, "virtualmachines", ns, "before")
		assert.True(t, strings.HasPrefix(value, encryptedPrefix))
		assert.NotContains(t, value, oldSecret)
	})

	t.Run("etcd refuses clients without a certificate of its CA", func(t *testing.T) {
		otherCA, err := framework.NewCA(t.TempDir(), "attacker")
		require.NoError(t, err)
		forged, err := otherCA.ClientCert("forged", "virt-api")
		require.NoError(t, err)
		forgedCert, err := tls.X509KeyPair(forged.CertPEM, forged.KeyPEM)
		require.NoError(t, err)
		u, err := url.Parse(etcd.URL)
		require.NoError(t, err)

		tests := []struct {
			name     string
			endpoint string
			tls      *tls.Config
			// refusal matches what the TLS handshake answers; empty for no handshake.
			refusal string
		}{
			{name: "TLS without a client certificate", endpoint: etcd.URL,
				tls: &tls.Config{RootCAs: roots}, refusal: "certificate required"},
			{name: "TLS with a certificate of another CA, named virt-api", endpoint: etcd.URL,
				// Sent whatever CAs etcd asks for, as an attacker would.
				tls: &tls.Config{RootCAs: roots, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
					return &forgedCert, nil
				}}, refusal: "unknown certificate authority|bad certificate"},
			{name: "plain HTTP", endpoint: "http://" + u.Host},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				client := rawEtcd(t, tt.endpoint, tt.tls)
				for op, do := range map[string]func(context.Context) error{
					"read": func(ctx context.Context) error {
						_, err := client.Get(ctx, "/hangar/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
						return err
					},
					"write": func(ctx context.Context) error {
						_, err := client.Put(ctx, "/hangar/kubevirt.io/virtualmachines/"+ns+"/planted", "{}")
						return err
					},
					"delete": func(ctx context.Context) error {
						_, err := client.Delete(ctx, "/hangar/", clientv3.WithPrefix())
						return err
					},
				} {
					opCtx, cancel := context.WithTimeout(ctx, time.Second)
					assert.Error(t, do(opCtx), "%s must be refused", op)
					cancel()
				}
				if tt.refusal != "" {
					conn, err := tls.Dial("tcp", u.Host, tt.tls)
					require.NoError(t, err, "TLS 1.3: the server judges the client certificate after the handshake")
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
					_, err = conn.Read(make([]byte, 1))
					require.Error(t, err)
					assert.Regexp(t, tt.refusal, err.Error())
				}
			})
		}
		// Nothing was planted or deleted.
		resp, err := admin.Get(ctx, "/hangar/kubevirt.io/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		require.NoError(t, err)
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		assert.ElementsMatch(t, []string{
			fmt.Sprintf("/hangar/kubevirt.io/virtualmachines/%s/before", ns),
			fmt.Sprintf("/hangar/kubevirt.io/virtualmachines/%s/with-userdata", ns),
			fmt.Sprintf("/hangar/kubevirt.io/virtualmachineinstances/%s/with-userdata", ns),
			fmt.Sprintf("/hangar/kubevirt.io/virtualmachineinstancereplicasets/%s/with-userdata", ns),
		}, keys)
	})
}
