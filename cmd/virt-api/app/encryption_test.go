package app

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
)

type recordingGetter struct{ asked []schema.GroupResource }

func (g *recordingGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	g.asked = append(g.asked, resource)
	return generic.RESTOptions{}, nil
}

func TestRequireEncryptionConfig(t *testing.T) {
	vmis := schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}
	tests := []struct {
		name      string
		resources string
		wantErr   string
	}{
		{name: "resource.group", resources: "[virtualmachines.kubevirt.io, virtualmachineinstances.kubevirt.io]"},
		{name: "every resource of the group", resources: `["*.kubevirt.io"]`},
		{name: "every resource", resources: `["*.*"]`},
		{name: "without the group: the core group's, not Hangar's", resources: "[virtualmachineinstances]",
			wantErr: `does not name virtualmachineinstances.kubevirt.io, which virt-api would then store in plaintext: list it as "virtualmachineinstances.kubevirt.io"`},
		{name: "another group", resources: `["*.example.com", secrets]`, wantErr: "does not name virtualmachineinstances.kubevirt.io"},
		{name: "another resource of the group", resources: "[virtualmachines.kubevirt.io]", wantErr: "does not name virtualmachineinstances.kubevirt.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "encryption.yaml")
			require.NoError(t, os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [configmaps]
  providers: [{identity: {}}]
- resources: `+tt.resources+`
  providers:
  - secretbox: {keys: [{name: key1, secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IHllcyE=}]}
  - identity: {}
`), 0o600))
			named, err := encryptedResources(path)
			require.NoError(t, err)
			inner := &recordingGetter{}
			getter := requireEncryptionConfig{RESTOptionsGetter: inner, path: path, named: named}

			_, err = getter.GetRESTOptions(vmis, nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Empty(t, inner.asked, "no storage for a resource that would be written in plaintext")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []schema.GroupResource{vmis}, inner.asked)
		})
	}
}

func TestEncryptedResourcesUnreadable(t *testing.T) {
	_, err := encryptedResources(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "read encryption configuration")
}

// TestServerRefusesPartialEncryptionConfig builds virt-api with a configuration that names
// Hangar's resources without their group: it must not start (and store in plaintext).
func TestServerRefusesPartialEncryptionConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "encryption.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [virtualmachines, virtualmachineinstances, virtualmachineinstancereplicasets]
  providers:
  - secretbox: {keys: [{name: key1, secret: c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/IHllcyE=}]}
`), 0o600))
	o := NewOptions()
	fs := pflag.NewFlagSet("virt-api", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--standalone", "--insecure-disable-delegated-auth",
		"--etcd-servers=http://127.0.0.1:1", "--encryption-provider-config=" + path,
		"--cert-dir=" + filepath.Join(dir, "certs")}))
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	o.RecommendedOptions.SecureServing.Listener = listener
	o.RecommendedOptions.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	require.NoError(t, o.Complete())
	require.NoError(t, o.Validate())
	config, err := o.Config()
	require.NoError(t, err)
	_, err = config.Complete().New()
	require.ErrorContains(t, err, "does not name virtualmachineinstances.kubevirt.io")
}
