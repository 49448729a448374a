package libvirtd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// libvirt probes every QEMU binary it uses (QEMU started with -machine none and some hundred
// QMP queries) and caches what it learns in a file per binary; a launcher's libvirtd starts
// with an empty cache, so every guest start paid for the probe (~0.4 s under TCG, more when
// many launchers start at once). libvirt trusts a cached file as long as the binaries' ctimes,
// its own version and (with KVM) the host's kernel, microcode and CPU match what the file
// records; containers of one image on one node share the image's files, ctimes included.
// So virt-handler has the probe run once per node, unprivileged, from its own image (the
// launcher's root file system) and hands the file to each launcher, which seeds its cache
// with it: libvirt uses it when it matches and probes again when it does not.

// MaxCapabilitiesSize bounds a capabilities file (libvirt's is ~80 KiB for one QEMU).
const MaxCapabilitiesSize = 4 << 20

// CapabilitiesFile is where a session below stateDir caches what libvirt learnt of emulator:
// $XDG_CACHE_HOME/libvirt/qemu/cache/capabilities/<sha256 of the binary's path>.xml.
func CapabilitiesFile(stateDir, emulator string) string {
	sum := sha256.Sum256([]byte(emulator))
	return filepath.Join(stateDir, CacheDir, "libvirt", "qemu", "cache", "capabilities", hex.EncodeToString(sum[:])+".xml")
}

// CheckCapabilities checks that data is a libvirt capabilities file of emulator.
func CheckCapabilities(data []byte, emulator string) error {
	if len(data) > MaxCapabilitiesSize {
		return fmt.Errorf("QEMU capabilities: %d bytes, more than %d", len(data), MaxCapabilitiesSize)
	}
	var caps struct {
		XMLName  xml.Name `xml:"qemuCaps"`
		Emulator string   `xml:"emulator"`
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&caps); err != nil {
		return fmt.Errorf("QEMU capabilities: %w", err)
	}
	if caps.Emulator != emulator {
		return fmt.Errorf("QEMU capabilities of %q, not of %q", caps.Emulator, emulator)
	}
	// One document: nothing may follow the root element but white space.
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("QEMU capabilities: %w", err)
		}
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			return errors.New("QEMU capabilities: more than one document")
		}
	}
}

// unavailableFeaturesFlag is how a capabilities file says QEMU's CPUs have the
// "unavailable-features" property (QEMU 4.1 and later).
var unavailableFeaturesFlag = []byte("<flag name='cpu-unavailable-features'/>")

// WithoutPerFeatureCPUQueries returns data without the unavailable-features flag. Once QEMU
// runs, libvirt 9 reads the guest's CPU back from it: with the flag, one qom-get per CPU
// property (~400 QMP round trips, each ~0.7 ms of QEMU's CPU under TCG: ~0.35 s of every start
// and more in a burst); without it, the CPUID feature words in two queries, its way for QEMU
// before 4.1. Both give the CPUID features; only the first knows MSR-based ones, and only with
// the flag does libvirt accept MSR-based features (vmx-*, arch-capabilities bits) listed in a
// domain, so a guest that lists CPU features keeps the file as probed. QEMU 10.1's
// qom-list-get answers in one query, for a libvirt that knows it.
func WithoutPerFeatureCPUQueries(data []byte) []byte {
	i := bytes.Index(data, unavailableFeaturesFlag)
	if i < 0 {
		return data
	}
	start, end := i, i+len(unavailableFeaturesFlag)
	// The whole line, as libvirt writes one flag per line.
	for start > 0 && (data[start-1] == ' ' || data[start-1] == '\t') {
		start--
	}
	if end < len(data) && data[end] == '\n' {
		end++
	}
	out := make([]byte, 0, len(data)-(end-start))
	return append(append(out, data[:start]...), data[end:]...)
}

// SeedCapabilities writes data as the cached capabilities of emulator for the session below
// stateDir, before libvirt looks for them, and returns the file's path. A file already there
// (libvirt's own) stays.
func SeedCapabilities(stateDir, emulator string, data []byte) (string, error) {
	if err := CheckCapabilities(data, emulator); err != nil {
		return "", err
	}
	path := CapabilitiesFile(stateDir, emulator)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}
