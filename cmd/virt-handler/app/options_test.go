package app

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name     string
		nodeName string // $NODE_NAME
		args     []string
		wantErrs []string
	}{
		{name: "the DaemonSet's", nodeName: "n1", args: []string{"--migration-ca-file=/etc/virt-handler/migration-ca/ca.crt",
			"--client-ca-file=/etc/virt-handler/tls/ca.crt"}},
		{name: "the node named by the flag", args: []string{"--node-name=n1", "--migration-ca-file=/ca.crt", "--client-ca-file=/client-ca.crt"}},
		{name: "no live migration, no CA", nodeName: "n1", args: []string{"--migration-listen-address=", "--client-ca-file=/client-ca.crt"}},
		{name: "a development certificate", nodeName: "n1", args: []string{"--migration-listen-address=", "--client-ca-file=/client-ca.crt",
			"--tls-cert-file=/tls.crt", "--tls-private-key-file=/tls.key"}},
		{name: "serving virt-api without its client CA", nodeName: "n1", args: []string{"--migration-ca-file=/ca.crt"},
			wantErrs: []string{"--client-ca-file is required with --listen-address"}},
		{name: "a certificate without its key", nodeName: "n1", args: []string{"--migration-ca-file=/ca.crt", "--client-ca-file=/c", "--tls-cert-file=/tls.crt"},
			wantErrs: []string{"--tls-cert-file and --tls-private-key-file go together"}},
		{name: "no node", args: []string{"--migration-ca-file=/ca.crt", "--client-ca-file=/c"}, wantErrs: []string{"--node-name (or $NODE_NAME) is required"}},
		{name: "migration without a CA", nodeName: "n1", args: []string{"--client-ca-file=/c"}, wantErrs: []string{"--migration-ca-file is required with --migration-listen-address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", tt.nodeName)
			o := NewOptions()
			fs := pflag.NewFlagSet("virt-handler", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			require.NoError(t, o.Complete())
			err := o.Validate()
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				assert.Equal(t, "n1", o.Handler.NodeName)
				return
			}
			for _, want := range tt.wantErrs {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := NewOptions()
	assert.True(t, o.Handler.SetupNetwork)
	assert.Equal(t, "/var/lib/kubelet/pods", o.PodsDir)
	assert.Equal(t, ":18186", o.ListenAddress)
	assert.Equal(t, ":18187", o.MigrationListenAddress)
	assert.Equal(t, ":8443", o.Metrics.Address)
	assert.Equal(t, []string{"virt-api"}, o.AllowedNames)
	assert.Equal(t, 4, o.Workers)
	assert.True(t, o.DevicePlugins)
}
