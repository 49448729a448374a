package exportserver

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
)

// lostFound is the file system's own directory at a claim's top, not the tenant's data.
const lostFound = "lost+found"

// serveArchive serves a directory volume: disk.tar.gz is all of it, dir/PATH (or PATH alone,
// KubeVirt's "replace /dir with the path") a file or a directory's listing.
//
// Symbolic links are left out of listings and tarballs; a link named in a URL is followed
// only as far as os.Root allows, that is never out of the volume.
func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request, v Volume, rest string) {
	var rel string
	switch first, after, _ := strings.Cut(rest, "/"); {
	case rest == "disk.tar.gz":
		s.serveTarball(w, r, v)
		return
	case first == "dir":
		rel = after
	case first == "" || first == "disk.tar.gz":
		http.NotFound(w, r)
		return
	default:
		rel = rest
	}
	name := strings.TrimSuffix(rel, "/")
	if name == "" {
		name = "."
	}
	f, err := openInVolume(v.Path, name)
	if err != nil {
		klog.V(2).InfoS("Refused a path", "volume", v.Name, "path", name, "err", err)
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case fi.IsDir():
		serveListing(w, r, f, name == ".")
	case fi.Mode().IsRegular():
		// Tenant files are downloads: a type guessed from the name could run a tenant's
		// HTML on the export's origin.
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
	default:
		http.Error(w, "not a regular file", http.StatusForbidden)
	}
}

// serveListing lists a directory's sub-directories and regular files as links relative to
// the request, so that they work behind a proxy that adds a prefix (KubeVirt's export proxy
// does); without a trailing slash the links repeat the directory's own name. The volume's
// top leaves out lost+found.
func serveListing(w http.ResponseWriter, r *http.Request, dir *os.File, top bool) {
	entries, err := dir.ReadDir(-1)
	if err != nil {
		http.Error(w, "cannot read the directory", http.StatusInternalServerError)
		return
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	base := ""
	if !strings.HasSuffix(r.URL.Path, "/") {
		base = path.Base(r.URL.Path) + "/"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	if r.Method == http.MethodHead {
		return
	}
	var b strings.Builder
	b.WriteString("<!doctype html>\n<meta charset=\"utf-8\">\n<pre>\n")
	for _, e := range entries {
		name := e.Name()
		switch {
		case top && name == lostFound:
			continue
		case e.IsDir():
			name += "/"
		case !e.Type().IsRegular():
			continue
		}
		// url.URL escapes the name and keeps a colon in it from reading as a scheme.
		href := (&url.URL{Path: base + name}).String()
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", html.EscapeString(href), html.EscapeString(name))
	}
	b.WriteString("</pre>\n")
	io.WriteString(w, b.String())
}

// serveTarball streams the volume's directories and regular files as a tar.gz with
// relative names, lost+found and symbolic links left out.
func (s *Server) serveTarball(w http.ResponseWriter, r *http.Request, v Volume) {
	root, err := os.OpenRoot(v.Path)
	if err != nil {
		klog.ErrorS(err, "Open volume", "volume", v.Name)
		http.Error(w, "volume unavailable", http.StatusInternalServerError)
		return
	}
	defer root.Close()
	w.Header().Set("Content-Type", "application/gzip")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	// WalkDir never follows a link: a DirEntry of one is not a directory.
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case name == ".":
			return nil
		case name == lostFound:
			return fs.SkipDir
		case d.IsDir():
			return addDir(tw, root, name)
		case d.Type().IsRegular():
			return addFile(tw, root, name)
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		abort(err, "Write tarball", v)
	}
}

func addDir(tw *tar.Writer, root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil // replaced since it was listed
	}
	return writeHeader(tw, fi, name+"/")
}

// addFile opens the file again by name, which a tenant may have swapped since the walk
// listed it: what is added is what the open file is, and only when it is a regular file.
func addFile(tw *tar.Writer, root *os.Root, name string) error {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if err := writeHeader(tw, fi, name); err != nil {
		return err
	}
	// The header promised Size bytes: a file that shrank meanwhile breaks the tarball,
	// one that grew is cut at the size.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	return nil
}

func writeHeader(tw *tar.Writer, fi fs.FileInfo, name string) error {
	h, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	h.Name = name
	return tw.WriteHeader(h)
}
