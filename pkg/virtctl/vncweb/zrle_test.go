package vncweb

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZRLEDecoder runs the page's RFB client tests (testdata/zrle-test.js) under node:
// every tile subencoding, tiles cut anywhere, tiles that lie, and one zlib stream across
// rectangles and updates fed byte by byte, and a hostile server's announcements (displays,
// rectangles, names, clipboards, compressed lengths past any display) refused at once.
func TestZRLEDecoder(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node (Debian's nodejs, hack/install-node-deps.sh)")
	out, err := exec.Command(node, "--test", "testdata/zrle-test.js").CombinedOutput()
	require.NoError(t, err, "%s", out)
}
