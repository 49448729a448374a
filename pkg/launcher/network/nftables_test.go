package network

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/knftables"
)

// A pool hands an interface back out only for its own family, and never one that a setup
// still holds.
func TestNFTPoolReuse(t *testing.T) {
	var p nftPool
	ip, bridge := knftables.NewFake(knftables.IPv4Family, nftTable), knftables.NewFake(knftables.BridgeFamily, nftTable)
	p.put(knftables.IPv4Family, ip)
	p.put(knftables.BridgeFamily, bridge)

	got, err := p.get(knftables.BridgeFamily)
	require.NoError(t, err)
	assert.Same(t, bridge, got)
	got, err = p.get(knftables.IPv4Family)
	require.NoError(t, err)
	assert.Same(t, ip, got)
	assert.Empty(t, p.idle[knftables.IPv4Family], "an interface in use stays out of the pool")

	p.put(knftables.IPv4Family, got)
	again, err := p.get(knftables.IPv4Family)
	require.NoError(t, err)
	assert.Same(t, ip, again)
}
