package exportserver

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// Config is what a Server serves.
type Config struct {
	Volumes []Volume
	// TokenFile holds the export's token; read per request (see readToken).
	TokenFile string
	// Expires is when every data request starts getting 410 Gone; zero is never.
	Expires time.Time
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Server is the export server's HTTP handler.
type Server struct {
	cfg     Config
	volumes map[string]Volume
}

// New returns the handler of cfg's volumes. It refuses duplicate names and a volume that is
// not there (a directory, or the block volume's device), so a pod built wrong fails at start.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, volumes: make(map[string]Volume, len(cfg.Volumes))}
	for _, v := range cfg.Volumes {
		if _, dup := s.volumes[v.Name]; dup {
			return nil, fmt.Errorf("volume %s is given twice", v.Name)
		}
		fi, err := os.Stat(v.Path)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if v.Kind != KindBlock && !fi.IsDir() {
			return nil, fmt.Errorf("volume %s: %s is not a directory", v.Name, v.Path)
		}
		s.volumes[v.Name] = v
	}
	return s, nil
}

const volumesPrefix = "/volumes/"

// ServeHTTP checks, in order, the method, the expiry and the token, then routes:
// /healthz needs none of it (the readiness probe), everything else needs all.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Tenant files never get a type guessed from their contents.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/healthz" {
		fmt.Fprint(w, "ok")
		return
	}
	if s.expired() {
		http.Error(w, "the export has expired", http.StatusGone)
		return
	}
	if reason := s.checkToken(r); reason != "" {
		http.Error(w, reason, http.StatusUnauthorized)
		return
	}
	name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, volumesPrefix), "/")
	v, ok := s.volumes[name]
	if !ok || !strings.HasPrefix(r.URL.Path, volumesPrefix) {
		http.NotFound(w, r)
		return
	}
	switch v.Kind {
	case KindKubeVirt, KindBlock:
		s.serveDisk(w, r, v, rest)
	case KindArchive:
		s.serveArchive(w, r, v, rest)
	default:
		http.NotFound(w, r)
	}
}

// serveDisk serves a KubeVirt disk's image raw (disk.img) or gzipped (disk.img.gz); a disk
// has no other URL.
func (s *Server) serveDisk(w http.ResponseWriter, r *http.Request, v Volume, rest string) {
	if rest != "disk.img" && rest != "disk.img.gz" {
		http.NotFound(w, r)
		return
	}
	f, modTime, err := openDisk(v)
	if err != nil {
		klog.ErrorS(err, "Open disk image", "volume", v.Name)
		http.Error(w, "disk image unavailable", http.StatusNotFound)
		return
	}
	defer f.Close()
	if rest == "disk.img" {
		w.Header().Set("Content-Type", "application/octet-stream")
		// ServeContent finds the size by seeking to the end, which a block device answers.
		http.ServeContent(w, r, "disk.img", modTime, f)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// Compressing on the fly costs the pod's CPU for every byte of a disk: the fastest level.
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if _, err := io.Copy(zw, f); err != nil {
		abort(err, "Gzip disk image", v)
	}
	if err := zw.Close(); err != nil {
		abort(err, "Gzip disk image", v)
	}
}

// openDisk opens a disk's image: the configured device of a block volume (the controller
// chose that path), or disk.img inside a kubevirt volume's directory through os.Root, so a
// tenant's symbolic link cannot lead out of it, and only when it is a regular file.
func openDisk(v Volume) (*os.File, time.Time, error) {
	var f *os.File
	var err error
	if v.Kind == KindBlock {
		f, err = os.Open(v.Path)
	} else {
		f, err = openInVolume(v.Path, DiskImage)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, time.Time{}, err
	}
	switch {
	case fi.Mode().IsRegular():
		return f, fi.ModTime(), nil
	case v.Kind == KindBlock && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		// A device's modification time says nothing of its contents.
		return f, time.Time{}, nil
	}
	f.Close()
	return nil, time.Time{}, fmt.Errorf("%s is not a regular file (%s)", fi.Name(), fi.Mode().Type())
}

// openInVolume opens name, a slash-separated relative path, inside the directory dir without
// leaving it. O_NONBLOCK keeps a FIFO the tenant named like a file from blocking the open;
// callers check the type of what they got.
func openInVolume(dir, name string) (*os.File, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("invalid path %q", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// abort ends a response whose status is already sent: the client sees a broken stream, not
// one that merely looks short.
func abort(err error, msg string, v Volume) {
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		klog.ErrorS(err, msg, "volume", v.Name)
	}
	panic(http.ErrAbortHandler)
}
