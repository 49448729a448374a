package app

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, o *Options)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o *Options) {
				assert.True(t, o.LeaderElect)
				assert.Equal(t, "hangar", o.LeaderElection.Namespace, "the configuration's namespace")
				assert.Equal(t, "virt-controller", o.LeaderElection.Name)
				assert.Equal(t, 15*time.Second, o.LeaderElection.LeaseDuration)
				assert.Equal(t, float32(200), o.QPS)
				assert.Equal(t, 400, o.Burst)
				assert.Equal(t, ":8080", o.HealthzAddress)
				assert.Equal(t, ":8443", o.Metrics.Address)
				assert.Nil(t, o.Controllers.MigrationCA)
			},
		},
		{
			name: "the Lease follows the configuration's namespace",
			args: []string{"--config-namespace=kubevirt"},
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, "kubevirt", o.LeaderElection.Namespace)
			},
		},
		{
			name: "a Lease namespace of its own",
			args: []string{"--config-namespace=kubevirt", "--leader-elect-namespace=leases", "--leader-elect=false"},
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, "leases", o.LeaderElection.Namespace)
				assert.False(t, o.LeaderElect)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("virt-controller", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			require.NoError(t, o.Complete())
			require.NoError(t, o.Validate())
			tt.check(t, o)
		})
	}
}

func TestOptionsMigrationCA(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("virt-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--migration-ca-cert=" + t.TempDir() + "/none"}))
	assert.ErrorContains(t, o.Complete(), "migration CA")
}
