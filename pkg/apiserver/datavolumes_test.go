package apiserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestCDILookupServed: discovery answers whether CDI is served; the answer is cached, a
// negative one for less long, so a CDI installed meanwhile is seen within cdiNotServedTTL.
func TestCDILookupServed(t *testing.T) {
	fake := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	now := time.Unix(1000, 0)
	l := newCDILookup(fake, nil)
	l.now = func() time.Time { return now }
	calls := func() int { return len(fake.Actions()) }

	served, err := l.Served(context.Background())
	require.NoError(t, err)
	assert.False(t, served)
	assert.Equal(t, 1, calls())

	fake.Resources = []*metav1.APIResourceList{{GroupVersion: "cdi.kubevirt.io/v1beta1",
		APIResources: []metav1.APIResource{{Name: "datavolumes", Namespaced: true, Kind: "DataVolume"}}}}
	served, _ = l.Served(context.Background())
	assert.False(t, served, "cached")
	assert.Equal(t, 1, calls())

	now = now.Add(cdiNotServedTTL)
	served, _ = l.Served(context.Background())
	assert.True(t, served, "refreshed")
	assert.Equal(t, 2, calls())

	fake.Resources = nil
	now = now.Add(cdiServedTTL - time.Second)
	served, _ = l.Served(context.Background())
	assert.True(t, served, "a positive answer is kept longer")
	now = now.Add(time.Second)
	served, _ = l.Served(context.Background())
	assert.False(t, served)
}
