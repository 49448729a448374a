package app

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/admission/eviction"
)

// TestWebhookPath: the eviction webhook's path is open unless its callers are to be authorized.
func TestWebhookPath(t *testing.T) {
	for _, tc := range []struct {
		name      string
		authorize bool
		open      bool
	}{
		{name: "open by default, as kube-apiserver calls webhooks anonymously", open: true},
		{name: "authorized with --authorize-webhook-callers", authorize: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{"https://etcd:2379"}
			o.AuthorizeWebhookCallers = tc.authorize
			require.NoError(t, o.Complete())
			require.NoError(t, o.Validate())
			assert.Equal(t, tc.open, slices.Contains(o.RecommendedOptions.Authorization.AlwaysAllowPaths, eviction.Path))
		})
	}
}

func TestAuthorizeWebhookCallersNeedsDelegation(t *testing.T) {
	o := NewOptions()
	o.Standalone, o.InsecureDisableDelegatedAuth, o.AuthorizeWebhookCallers = true, true, true
	o.EmbeddedEtcdDir = t.TempDir()
	require.NoError(t, o.Complete())
	assert.ErrorContains(t, o.Validate(), "--authorize-webhook-callers needs delegated authorization")
}

// TestPriorityAndFairness: off by default (kube-apiserver has queued every proxied request
// already), on with kube's own flag.
func TestPriorityAndFairness(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{name: "off by default"},
		{name: "on with the flag", args: []string{"--enable-priority-and-fairness"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("virt-api", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			assert.Equal(t, tc.want, o.RecommendedOptions.Features.EnablePriorityAndFairness)
		})
	}
}
