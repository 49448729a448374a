package localcsi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// An ID names a volume or a snapshot of this driver: its kind, a hash of the name the CO gave
// it, and the node it lives on ("vol-<32 hex>@hangar-node-1"). Only the hash ever reaches the
// file system, so no ID a caller makes up can name a path outside the data directory; the
// node lets a driver tell "not mine, on another node" from "does not exist".
type ID struct {
	Kind Kind
	Hash string
	Node string
}

// Kind is what an ID names.
type Kind string

const (
	VolumeKind   Kind = "vol"
	SnapshotKind Kind = "snap"
)

// maxNameLength bounds the names a CO gives volumes and snapshots (CSI's limit for strings
// it passes is 128 bytes).
const maxNameLength = 128

var (
	idPattern = regexp.MustCompile(`^(vol|snap)-([0-9a-f]{32})@([a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?)$`)
	// nodePattern: a node name as Kubernetes allows it in a label value (the topology label
	// carries it): a DNS-1123 subdomain of at most 63 characters.
	nodePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)
)

// newID is the ID of the volume or snapshot a CO calls name on node: the same name gives the
// same ID, which makes CreateVolume and CreateSnapshot idempotent.
func newID(kind Kind, name, node string) ID {
	sum := sha256.Sum256([]byte(string(kind) + "\x00" + name))
	return ID{Kind: kind, Hash: hex.EncodeToString(sum[:16]), Node: node}
}

func (id ID) String() string { return fmt.Sprintf("%s-%s@%s", id.Kind, id.Hash, id.Node) }

// ParseID parses an ID of kind strictly: anything else is refused.
func ParseID(kind Kind, s string) (ID, error) {
	m := idPattern.FindStringSubmatch(s)
	if m == nil || Kind(m[1]) != kind {
		return ID{}, fmt.Errorf("%q is not a %s ID of this driver", s, kind)
	}
	return ID{Kind: kind, Hash: m[2], Node: m[3]}, nil
}

// validName checks a name the CO gives a volume or snapshot.
func validName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name is empty")
	case len(name) > maxNameLength:
		return fmt.Errorf("name is longer than %d bytes", maxNameLength)
	case !utf8.ValidString(name):
		return fmt.Errorf("name is not UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name holds a control character")
		}
	}
	return nil
}

// ValidNode checks a node name.
func ValidNode(node string) error {
	if !nodePattern.MatchString(node) {
		return fmt.Errorf("node name %q: not a DNS-1123 subdomain of at most 63 characters", node)
	}
	return nil
}
