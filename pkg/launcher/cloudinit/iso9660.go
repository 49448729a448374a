package cloudinit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf16"
)

// A minimal ISO 9660 writer: one root directory of small files, with a Joliet tree beside the
// primary one so the files keep their lower-case names with hyphens (user-data, meta-data),
// which plain ISO 9660 cannot spell. Linux, blkid and cloud-init read Joliet; nothing here
// needs Rock Ridge, El Torito or subdirectories.

const sectorSize = 2048

// File is a file in the image's root directory.
type File struct {
	Name string
	Data []byte
}

// Sector layout: system area (0-15), primary and Joliet volume descriptors, terminator,
// path tables (little- and big-endian, per tree), the two root directories, then file data.
const (
	sectorPVD = 16 + iota
	sectorSVD
	sectorTerminator
	sectorPrimaryPathL
	sectorPrimaryPathM
	sectorJolietPathL
	sectorJolietPathM
	sectorPrimaryRoot
	sectorJolietRoot
	sectorFirstFile
)

// WriteISO writes an ISO 9660 image with volume label label and files in its root.
func WriteISO(w io.Writer, label string, files []File, now time.Time) error {
	if len(label) > 16 { // Joliet spells the label in 16 UCS-2 characters
		return fmt.Errorf("volume label %q is longer than 16 characters", label)
	}
	files = append([]File(nil), files...)
	extents := make(map[string]uint32, len(files))
	next := uint32(sectorFirstFile)
	for _, f := range files {
		if f.Name == "" || strings.ContainsAny(f.Name, "/;") || len(f.Name) > 64 {
			return fmt.Errorf("bad file name %q", f.Name)
		}
		if _, dup := extents[f.Name]; dup {
			return fmt.Errorf("file %q given twice", f.Name)
		}
		extents[f.Name] = next
		next += sectors(len(f.Data))
	}
	total := next

	primary, err := rootDirectory(files, extents, primaryName, sectorPrimaryRoot, now)
	if err != nil {
		return err
	}
	joliet, err := rootDirectory(files, extents, jolietName, sectorJolietRoot, now)
	if err != nil {
		return err
	}

	img := make([]byte, 0, int(sectorFirstFile)*sectorSize)
	img = append(img, make([]byte, 16*sectorSize)...)
	img = append(img, volumeDescriptor(1, label, total, sectorPrimaryPathL, sectorPrimaryPathM, sectorPrimaryRoot, now)...)
	img = append(img, volumeDescriptor(2, label, total, sectorJolietPathL, sectorJolietPathM, sectorJolietRoot, now)...)
	img = append(img, terminator()...)
	img = append(img, pathTable(binary.LittleEndian, sectorPrimaryRoot)...)
	img = append(img, pathTable(binary.BigEndian, sectorPrimaryRoot)...)
	img = append(img, pathTable(binary.LittleEndian, sectorJolietRoot)...)
	img = append(img, pathTable(binary.BigEndian, sectorJolietRoot)...)
	img = append(img, primary...)
	img = append(img, joliet...)
	if _, err := w.Write(img); err != nil {
		return err
	}
	for _, f := range files {
		if _, err := w.Write(padSector(f.Data)); err != nil {
			return err
		}
	}
	return nil
}

func sectors(n int) uint32 { return uint32((n + sectorSize - 1) / sectorSize) }

func padSector(b []byte) []byte {
	out := make([]byte, int(sectors(len(b)))*sectorSize)
	copy(out, b)
	return out
}

// primaryName is an ISO 9660 level 2 file identifier: upper-case d-characters, a dot, ";1".
func primaryName(name string) []byte {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if !strings.Contains(s, ".") {
		s += "."
	}
	if len(s) > 30 {
		s = s[:30]
	}
	return []byte(s + ";1")
}

// jolietName is the name in UCS-2 big-endian.
func jolietName(name string) []byte { return ucs2(name) }

func ucs2(s string) []byte {
	u := utf16.Encode([]rune(s))
	out := make([]byte, 2*len(u))
	for i, c := range u {
		binary.BigEndian.PutUint16(out[2*i:], c)
	}
	return out
}

// rootDirectory is the root directory's sector: ".", "..", then the files sorted by
// identifier as ISO 9660 requires.
func rootDirectory(files []File, extents map[string]uint32, name func(string) []byte, self uint32, now time.Time) ([]byte, error) {
	type entry struct {
		id   []byte
		file File
	}
	entries := make([]entry, len(files))
	for i, f := range files {
		entries[i] = entry{name(f.Name), f}
	}
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].id, entries[j].id) < 0 })
	dir := directoryRecord([]byte{0}, self, sectorSize, true, now)
	dir = append(dir, directoryRecord([]byte{1}, self, sectorSize, true, now)...)
	for i, e := range entries {
		if i > 0 && bytes.Equal(e.id, entries[i-1].id) {
			return nil, fmt.Errorf("files %q and %q get the same ISO 9660 name", entries[i-1].file.Name, e.file.Name)
		}
		extent := extents[e.file.Name]
		if len(e.file.Data) == 0 {
			extent = 0
		}
		dir = append(dir, directoryRecord(e.id, extent, uint32(len(e.file.Data)), false, now)...)
	}
	if len(dir) > sectorSize {
		return nil, fmt.Errorf("%d files do not fit one directory sector", len(files))
	}
	return padSector(dir), nil
}

func directoryRecord(id []byte, extent, size uint32, dir bool, now time.Time) []byte {
	n := 33 + len(id)
	if n%2 == 1 {
		n++
	}
	r := make([]byte, n)
	r[0] = byte(n)
	putBoth32(r[2:], extent)
	putBoth32(r[10:], size)
	copy(r[18:25], recordingDate(now))
	if dir {
		r[25] = 2
	}
	putBoth16(r[28:], 1)
	r[32] = byte(len(id))
	copy(r[33:], id)
	return r
}

func pathTable(order binary.ByteOrder, root uint32) []byte {
	t := make([]byte, sectorSize)
	t[0] = 1 // the root's identifier is one zero byte
	order.PutUint32(t[2:], root)
	order.PutUint16(t[6:], 1)
	return t
}

const pathTableSize = 10

// volumeDescriptor is the primary (kind 1) or, with Joliet's escape sequence, the
// supplementary (kind 2) volume descriptor.
func volumeDescriptor(kind byte, label string, total, pathL, pathM, root uint32, now time.Time) []byte {
	v := make([]byte, sectorSize)
	v[0] = kind
	copy(v[1:6], "CD001")
	v[6] = 1
	text := func(off, size int, s string) {
		if kind == 2 {
			b := ucs2(s)
			for i := 0; i < size; i += 2 {
				v[off+i], v[off+i+1] = 0, ' '
			}
			copy(v[off:off+size], b)
			return
		}
		copy(v[off:off+size], fmt.Sprintf("%-*s", size, s))
	}
	text(8, 32, "LINUX")
	text(40, 32, label)
	putBoth32(v[80:], total)
	if kind == 2 {
		copy(v[88:91], "%/E") // Joliet level 3
	}
	putBoth16(v[120:], 1)
	putBoth16(v[124:], 1)
	putBoth16(v[128:], sectorSize)
	putBoth32(v[132:], pathTableSize)
	binary.LittleEndian.PutUint32(v[140:], pathL)
	binary.BigEndian.PutUint32(v[148:], pathM)
	copy(v[156:190], directoryRecord([]byte{0}, root, sectorSize, true, now))
	for _, f := range []struct{ off, size int }{{190, 128}, {318, 128}, {446, 128}, {574, 128}, {702, 36}, {738, 36}, {776, 36}} {
		text(f.off, f.size, "")
	}
	text(574, 128, "HANGAR")
	stamp := volumeDate(now)
	copy(v[813:], stamp)
	copy(v[830:], stamp)
	copy(v[847:], volumeDate(time.Time{}))
	copy(v[864:], stamp)
	v[881] = 1
	return v
}

func terminator() []byte {
	v := make([]byte, sectorSize)
	v[0] = 255
	copy(v[1:6], "CD001")
	v[6] = 1
	return v
}

func recordingDate(t time.Time) []byte {
	t = t.UTC()
	return []byte{byte(t.Year() - 1900), byte(t.Month()), byte(t.Day()), byte(t.Hour()), byte(t.Minute()), byte(t.Second()), 0}
}

// volumeDate is the 17-byte date of a volume descriptor; the zero time is "not specified".
func volumeDate(t time.Time) []byte {
	if t.IsZero() {
		return append([]byte(strings.Repeat("0", 16)), 0)
	}
	t = t.UTC()
	return append([]byte(fmt.Sprintf("%04d%02d%02d%02d%02d%02d%02d", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e7)), 0)
}

func putBoth16(b []byte, v uint16) {
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
}

func putBoth32(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
}
