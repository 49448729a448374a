package framework

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
)

// TestOptionFlags: the command line a virt-api process gets says what the in-process options
// said, or a benchmark's setting (BENCH_LAUNCHER_POD_CHECKS=off) would silently be lost and
// the figures would be of another configuration.
func TestOptionFlags(t *testing.T) {
	tests := []struct {
		name string
		set  func(o *virtapi.Options)
		// want checks the options parsed back from the flags.
		want func(t *testing.T, o *virtapi.Options)
		// args, when exact, is the whole command line.
		args  []string
		exact bool
	}{
		{
			name:  "defaults give no flags",
			set:   func(o *virtapi.Options) {},
			want:  func(t *testing.T, o *virtapi.Options) {},
			args:  nil,
			exact: true,
		},
		{
			name: "admission plugin disabled",
			set: func(o *virtapi.Options) {
				o.RecommendedOptions.Admission.DisablePlugins = []string{podpolicy.PluginName}
			},
			want: func(t *testing.T, o *virtapi.Options) {
				assert.Equal(t, []string{podpolicy.PluginName}, o.RecommendedOptions.Admission.DisablePlugins)
			},
			args:  []string{"--disable-admission-plugins=" + podpolicy.PluginName},
			exact: true,
		},
		{
			name: "etcd servers, port and storage media type",
			set: func(o *virtapi.Options) {
				o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}
				o.RecommendedOptions.SecureServing.BindPort = 34567
				o.RecommendedOptions.Etcd.DefaultStorageMediaType = "application/json"
			},
			want: func(t *testing.T, o *virtapi.Options) {
				assert.Equal(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList)
				assert.Equal(t, 34567, o.RecommendedOptions.SecureServing.BindPort)
				assert.Equal(t, "application/json", o.RecommendedOptions.Etcd.DefaultStorageMediaType)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := virtapi.NewOptions()
			tt.set(o)
			args, err := optionFlags(o)
			require.NoError(t, err)
			if tt.exact {
				assert.Equal(t, tt.args, args)
			}

			parsed := virtapi.NewOptions()
			fs := pflag.NewFlagSet("virt-api", pflag.ContinueOnError)
			parsed.AddFlags(fs)
			require.NoError(t, fs.Parse(args))
			tt.want(t, parsed)
		})
	}
}
