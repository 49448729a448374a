//go:build libvirt

package node

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hangarvm/hangar/test/browser"
)

// TestVNCBytesFigures measures what the VNC page's client receives from a real QEMU for a
// guest's 1024×768 text console, asking for ZRLE (the page now) and for raw (what the page
// asked for before ZRLE: raw, copy-rect, desktop size): the first full screen, then
// HANGAR_BENCH_VNC_SECONDS of a console scrolling the kernel's log at up to 20 lines a
// second, both clients watching the same screen at once. Skipped without that variable;
// hack/bench/vnc.sh prints the figures.
func TestVNCBytesFigures(t *testing.T) {
	seconds, _ := strconv.Atoi(os.Getenv("HANGAR_BENCH_VNC_SECONDS"))
	if seconds <= 0 {
		t.Skip("set HANGAR_BENCH_VNC_SECONDS")
	}
	clients := []struct{ name, encodings string }{
		{"raw", "raw,copyrect,desktopsize"},
		{"zrle", "zrle,copyrect,raw,desktopsize"},
	}
	g := startVGAGuest(t)
	g.showText()
	first := map[string]int{}
	for _, c := range clients {
		first[c.name] = browser.RFBCheck(t, g.vnc, encodingsOf(c.encodings), 0).FirstScreenBytes
	}
	fmt.Printf("vnc bytes, 1024x768 text console, first full screen: raw %d, ZRLE %d (%.0fx fewer)\n",
		first["raw"], first["zrle"], float64(first["raw"])/float64(first["zrle"]))

	g.run(`(while :; do dmesg | while read -r l; do echo "$l"; usleep 50000; done; done > /dev/tty1 &)`)
	watched := map[string]browser.RFBSeen{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := browser.RFBCheck(t, g.vnc, encodingsOf(c.encodings), time.Duration(seconds)*time.Second)
			mu.Lock()
			watched[c.name] = seen
			mu.Unlock()
		}()
	}
	wg.Wait()
	raw, zrle := watched["raw"], watched["zrle"]
	fmt.Printf("vnc bytes, %d s of a scrolling text console: raw %d (%d updates), ZRLE %d (%d updates) (%.0fx fewer)\n",
		seconds, raw.WatchedBytes, raw.Updates, zrle.WatchedBytes, zrle.Updates, float64(raw.WatchedBytes)/float64(zrle.WatchedBytes))
}
