package handler

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// What a launcher reports is the tenant's word: whoever may exec into the launcher container
// can answer in its place. The handler writes only what passes these checks into the
// instance's status, so a launcher can misreport its own guest, never more.

// Bounds on launcher reports.
const (
	maxReason     = 64
	maxMessage    = 1024
	maxInterfaces = 16
	maxEvents     = 128
)

var (
	reasonPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	// A Linux interface name: at most 15 bytes, no slash, no whitespace, not . or ..
	ifnamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,15}$`)
)

// checkState refuses a state that does not describe the instance uid in the protocol's terms.
func checkState(s api.State, uid types.UID) error {
	if s.UID != string(uid) {
		return fmt.Errorf("the launcher reports instance %q, not %s", truncate(s.UID, 64), uid)
	}
	switch s.Phase {
	case api.PhaseNone, api.PhaseStarting, api.PhaseRunning, api.PhasePaused, api.PhaseShuttingDown, api.PhaseSucceeded, api.PhaseFailed, api.PhaseIncoming:
	default:
		return fmt.Errorf("the launcher reports an unknown phase %q", truncate(string(s.Phase), 32))
	}
	if s.Reason != "" && (len(s.Reason) > maxReason || !reasonPattern.MatchString(s.Reason)) {
		return fmt.Errorf("the launcher reports a malformed reason %q", truncate(s.Reason, maxReason))
	}
	if len(s.Interfaces) > maxInterfaces {
		return fmt.Errorf("the launcher reports %d interfaces", len(s.Interfaces))
	}
	if m := s.Migration; m != nil {
		switch {
		case len(m.UID) > 64:
			return fmt.Errorf("the launcher reports a migration uid of %d bytes", len(m.UID))
		case m.Role != api.MigrationSource && m.Role != api.MigrationTarget:
			return fmt.Errorf("the launcher reports a migration role %q", truncate(string(m.Role), 32))
		case m.Mode != "" && m.Mode != api.MigrationPreCopy && m.Mode != api.MigrationPostCopy:
			return fmt.Errorf("the launcher reports a migration mode %q", truncate(string(m.Mode), 32))
		case m.AbortStatus != "" && m.AbortStatus != api.AbortAborting && m.AbortStatus != api.AbortSucceeded && m.AbortStatus != api.AbortFailed:
			return fmt.Errorf("the launcher reports an abort status %q", truncate(string(m.AbortStatus), 32))
		case m.Reason != "" && (len(m.Reason) > maxReason || !reasonPattern.MatchString(m.Reason)):
			return fmt.Errorf("the launcher reports a malformed migration reason %q", truncate(m.Reason, maxReason))
		}
	}
	return nil
}

// checkEvents checks every state of a long poll's answer.
func checkEvents(ev api.Events, uid types.UID) error {
	if len(ev.Events) > maxEvents {
		return fmt.Errorf("the launcher sent %d events", len(ev.Events))
	}
	for _, e := range ev.Events {
		if err := checkState(e.State, uid); err != nil {
			return err
		}
	}
	return checkState(ev.State, uid)
}

// reportedInterfaces keeps of the launcher's interfaces those the instance has, with
// well-formed addresses and names; the rest is dropped.
func reportedInterfaces(vmi *v1.VirtualMachineInstance, in []api.Interface) []api.Interface {
	names := map[string]bool{}
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		names[i.Name] = true
	}
	var out []api.Interface
	for _, i := range in {
		if !names[i.Name] {
			continue
		}
		names[i.Name] = false // once each
		clean := api.Interface{Name: i.Name}
		if mac, err := net.ParseMAC(i.MAC); err == nil && len(mac) == 6 {
			clean.MAC = mac.String()
		}
		if ip, err := netip.ParseAddr(i.IP); err == nil {
			clean.IP = ip.String()
		}
		if ip, err := netip.ParseAddr(i.GuestIP); err == nil {
			clean.GuestIP = ip.String()
		}
		if ifnamePattern.MatchString(i.PodInterfaceName) && i.PodInterfaceName != "." && i.PodInterfaceName != ".." {
			clean.PodInterfaceName = i.PodInterfaceName
		}
		out = append(out, clean)
	}
	return out
}

// cleanMessage makes a launcher's message fit a condition: valid UTF-8, control characters
// (a forged line of `kubectl describe`) as spaces, at most maxMessage bytes.
func cleanMessage(m string) string {
	m = strings.ToValidUTF8(m, "�")
	m = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, m)
	return truncate(m, maxMessage)
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !validCut(s, n) {
		n--
	}
	return s[:n] + "…"
}

func validCut(s string, n int) bool {
	// A byte that is not a UTF-8 continuation byte starts a rune.
	return s[n]&0xC0 != 0x80
}
