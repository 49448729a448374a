package localcsi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Store keeps one node's volumes and snapshots in a data directory:
//
//	volumes/<hash>/meta.json    what the volume is (volumeMeta)
//	volumes/<hash>/data/        its content: the directory bound into pods
//	snapshots/<hash>/meta.json  what the snapshot is (snapshotMeta)
//	snapshots/<hash>/data/      a plain copy of the volume's content when it was taken
//	tmp/                        volumes and snapshots being made, renamed into place when whole
//
// Capacity is bookkeeping: a volume's size is what it was asked for, counted against the
// node's capacity, and not enforced on what a pod writes (the directories share the host's
// file system, as local-path's do).
type Store struct {
	root     string
	node     string
	capacity int64
	// mu serializes every change: this is a test driver, and the sidecars call it one
	// operation at a time per object anyway.
	mu sync.Mutex
	// now is the clock of snapshots' creation times.
	now func() time.Time
}

type volumeMeta struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Capacity int64  `json:"capacity"`
	// Block: the volume is a sparse file, data/disk.img, published as a block device.
	Block bool `json:"block,omitempty"`
	// Source is the snapshot or volume ID the volume was made from, if any.
	Source string `json:"source,omitempty"`
}

type snapshotMeta struct {
	Name         string `json:"name"`
	ID           string `json:"id"`
	SourceVolume string `json:"sourceVolume"`
	// Size is the source volume's capacity: a restore needs at least that much.
	Size int64 `json:"size"`
	// Block: a copy of a Block volume, restored as one.
	Block bool `json:"block,omitempty"`
	// CreatedNanos is when the copy was made (Unix nanoseconds).
	CreatedNanos int64 `json:"createdNanos"`
}

// NewStore opens (making it if needed) the data directory of node.
func NewStore(root, node string, capacity int64) (*Store, error) {
	if err := ValidNode(node); err != nil {
		return nil, err
	}
	if capacity <= 0 {
		return nil, fmt.Errorf("capacity %d: must be positive", capacity)
	}
	for _, dir := range []string{"volumes", "snapshots", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o700); err != nil {
			return nil, err
		}
	}
	// What a crash left half made is of no use: its name was never returned to anyone.
	entries, err := os.ReadDir(filepath.Join(root, "tmp"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(root, "tmp", e.Name())); err != nil {
			return nil, err
		}
	}
	return &Store{root: root, node: node, capacity: capacity, now: time.Now}, nil
}

func (s *Store) dir(id ID) string {
	kind := "volumes"
	if id.Kind == SnapshotKind {
		kind = "snapshots"
	}
	return filepath.Join(s.root, kind, id.Hash)
}

// DataDir is the directory holding a volume's (or snapshot's) content.
func (s *Store) DataDir(id ID) string { return filepath.Join(s.dir(id), "data") }

// own refuses an ID of another node: its data is not here.
func (s *Store) own(id ID) error {
	if id.Node != s.node {
		return status.Errorf(codes.ResourceExhausted, "%s lives on node %s, this is node %s", id, id.Node, s.node)
	}
	return nil
}

func readMeta(dir string, v any) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// volume reads a volume of this node; false when it does not exist.
func (s *Store) volume(id ID) (volumeMeta, bool, error) {
	var m volumeMeta
	ok, err := readMeta(s.dir(id), &m)
	return m, ok, err
}

func (s *Store) snapshot(id ID) (snapshotMeta, bool, error) {
	var m snapshotMeta
	ok, err := readMeta(s.dir(id), &m)
	return m, ok, err
}

// Volume returns an existing volume of this node, or a gRPC error: NotFound, or
// ResourceExhausted for another node's.
func (s *Store) Volume(id ID) (volumeMeta, error) {
	if err := s.own(id); err != nil {
		return volumeMeta{}, err
	}
	m, ok, err := s.volume(id)
	if err != nil {
		return m, status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if !ok {
		return m, status.Errorf(codes.NotFound, "volume %s does not exist", id)
	}
	return m, nil
}

// used is the capacity the node's volumes take.
func (s *Store) used() (int64, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "volumes"))
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range entries {
		var m volumeMeta
		if ok, err := readMeta(filepath.Join(s.root, "volumes", e.Name()), &m); err != nil {
			return 0, err
		} else if ok {
			sum += m.Capacity
		}
	}
	return sum, nil
}

// Available is the capacity not taken by volumes.
func (s *Store) Available() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	used, err := s.used()
	return max(s.capacity-used, 0), err
}

// CreateVolume makes the volume called name of capacity bytes, a directory or (block) a file,
// empty or from source (a snapshot or volume ID, already parsed). Asked again with the same
// name and arguments it returns the volume it made; with others, AlreadyExists.
func (s *Store) CreateVolume(name string, capacity int64, block bool, source *ID) (volumeMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := newID(VolumeKind, name, s.node)
	want := volumeMeta{Name: name, ID: id.String(), Capacity: capacity, Block: block}
	if source != nil {
		want.Source = source.String()
	}
	if m, ok, err := s.volume(id); err != nil {
		return m, status.Errorf(codes.Internal, "volume %s: %v", id, err)
	} else if ok {
		if m != want {
			return m, status.Errorf(codes.AlreadyExists, "volume %q exists with capacity %d, block %t and source %q", name, m.Capacity, m.Block, m.Source)
		}
		return m, nil
	}
	if capacity > s.capacity {
		return want, status.Errorf(codes.OutOfRange, "%d bytes: more than this node's capacity, %d", capacity, s.capacity)
	}
	used, err := s.used()
	if err != nil {
		return want, status.Errorf(codes.Internal, "capacity: %v", err)
	}
	if used+capacity > s.capacity {
		return want, status.Errorf(codes.ResourceExhausted, "%d bytes asked, %d of %d left on node %s", capacity, s.capacity-used, s.capacity, s.node)
	}
	// The content: a copy of the source's, or an empty directory anyone may write (as
	// local-path's are: pods of any user share the claim).
	var from string
	if source != nil {
		if err := s.own(*source); err != nil {
			return want, err
		}
		var size int64
		var sourceBlock bool
		switch source.Kind {
		case SnapshotKind:
			m, ok, err := s.snapshot(*source)
			if err != nil {
				return want, status.Errorf(codes.Internal, "snapshot %s: %v", source, err)
			}
			if !ok {
				return want, status.Errorf(codes.NotFound, "snapshot %s does not exist", source)
			}
			size, sourceBlock = m.Size, m.Block
		case VolumeKind:
			m, ok, err := s.volume(*source)
			if err != nil {
				return want, status.Errorf(codes.Internal, "volume %s: %v", source, err)
			}
			if !ok {
				return want, status.Errorf(codes.NotFound, "volume %s does not exist", source)
			}
			size, sourceBlock = m.Capacity, m.Block
		}
		if sourceBlock != block {
			return want, status.Errorf(codes.InvalidArgument, "source %s is a %s volume, this one would be a %s volume", source, volumeMode(sourceBlock), volumeMode(block))
		}
		if capacity < size {
			return want, status.Errorf(codes.OutOfRange, "%d bytes: smaller than the source %s (%d bytes)", capacity, source, size)
		}
		from = s.DataDir(*source)
	}
	if err := s.commit(id, want, func(data string) error {
		switch {
		case from != "" && block:
			// A larger volume than its source: the disk grows, as a bigger block device would.
			if err := copyTree(from, data); err != nil {
				return err
			}
			return growFile(filepath.Join(data, blockFile), capacity)
		case from != "":
			return copyTree(from, data)
		case block:
			if err := os.Mkdir(data, 0o700); err != nil {
				return err
			}
			return growFile(filepath.Join(data, blockFile), capacity)
		}
		if err := os.Mkdir(data, 0o777); err != nil {
			return err
		}
		return os.Chmod(data, 0o777) // whatever the umask
	}); err != nil {
		return want, status.Errorf(codes.Internal, "create volume %s: %v", id, err)
	}
	return want, nil
}

// commit makes an object in tmp/ (fill makes its data directory, then its metadata is
// written) and renames it into place: a crash leaves either nothing or all of it.
func (s *Store) commit(id ID, meta any, fill func(data string) error) error {
	tmp, err := os.MkdirTemp(filepath.Join(s.root, "tmp"), string(id.Kind)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fill(filepath.Join(tmp, "data")); err != nil {
		return err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.dir(id))
}

// remove deletes an object of this node (renamed away first, so a half-deleted one is never
// seen as whole); one that does not exist is no error.
func (s *Store) remove(id ID) error {
	dir := s.dir(id)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.root, "tmp"), "delete-")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(tmp, "x")); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.RemoveAll(tmp) // unlinkat, never following a link
}

// DeleteVolume deletes a volume of this node (a Block volume's loop device first); its
// snapshots stay (they are copies).
func (s *Store) DeleteVolume(id ID) error {
	if id.Node != s.node {
		return status.Errorf(codes.FailedPrecondition, "volume %s lives on node %s, this is node %s", id, id.Node, s.node)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok, err := s.volume(id); err == nil && ok && m.Block {
		if err := detachLoop(filepath.Join(s.DataDir(id), blockFile)); err != nil {
			return status.Errorf(codes.Internal, "delete volume %s: %v", id, err)
		}
	}
	if err := s.remove(id); err != nil {
		return status.Errorf(codes.Internal, "delete volume %s: %v", id, err)
	}
	return nil
}

// CreateSnapshot copies the volume source into the snapshot called name. Asked again for the
// same name and source it returns the snapshot it made; for another source, AlreadyExists.
func (s *Store) CreateSnapshot(name string, source ID) (snapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := newID(SnapshotKind, name, s.node)
	if m, ok, err := s.snapshot(id); err != nil {
		return m, status.Errorf(codes.Internal, "snapshot %s: %v", id, err)
	} else if ok {
		if m.SourceVolume != source.String() {
			return m, status.Errorf(codes.AlreadyExists, "snapshot %q exists, of volume %s", name, m.SourceVolume)
		}
		return m, nil
	}
	if source.Node != s.node {
		return snapshotMeta{}, status.Errorf(codes.FailedPrecondition, "volume %s lives on node %s, this is node %s", source, source.Node, s.node)
	}
	vol, ok, err := s.volume(source)
	if err != nil {
		return snapshotMeta{}, status.Errorf(codes.Internal, "volume %s: %v", source, err)
	}
	if !ok {
		return snapshotMeta{}, status.Errorf(codes.NotFound, "volume %s does not exist", source)
	}
	m := snapshotMeta{Name: name, ID: id.String(), SourceVolume: source.String(), Size: vol.Capacity, Block: vol.Block, CreatedNanos: s.now().UnixNano()}
	if err := s.commit(id, m, func(data string) error { return copyTree(s.DataDir(source), data) }); err != nil {
		return m, status.Errorf(codes.Internal, "snapshot %s of %s: %v", id, source, err)
	}
	return m, nil
}

// DeleteSnapshot deletes a snapshot of this node; the volumes restored from it stay.
func (s *Store) DeleteSnapshot(id ID) error {
	if id.Node != s.node {
		return status.Errorf(codes.FailedPrecondition, "snapshot %s lives on node %s, this is node %s", id, id.Node, s.node)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.remove(id); err != nil {
		return status.Errorf(codes.Internal, "delete snapshot %s: %v", id, err)
	}
	return nil
}

// Snapshots lists this node's snapshots, ordered by ID.
func (s *Store) Snapshots() ([]snapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := os.ReadDir(filepath.Join(s.root, "snapshots"))
	if err != nil {
		return nil, err
	}
	var all []snapshotMeta
	for _, e := range entries {
		var m snapshotMeta
		if ok, err := readMeta(filepath.Join(s.root, "snapshots", e.Name()), &m); err != nil {
			return nil, err
		} else if ok {
			all = append(all, m)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all, nil
}

// growFile makes file (creating it, sparse) at least size bytes long.
func growFile(file string, size int64) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < size {
		err = f.Truncate(size)
	}
	return errors.Join(err, f.Close())
}

func volumeMode(block bool) string {
	if block {
		return "Block"
	}
	return "Filesystem"
}
