// Command imagebuild packs a root filesystem into a single-layer container
// image and writes it as a docker-archive tarball that `ctr -n k8s.io images
// import` accepts. The local cluster has no registry and no internet, so every
// image it runs (pause, busybox, Hangar's components) is built this way.
//
//	imagebuild -image hangar.local/busybox:v2 -out busybox.tar \
//	    -dir rootfs/ -file /bin/busybox:/bin/busybox -entrypoint /bin/sh
//
// Files get uid/gid 0 and a fixed timestamp, so the same input always yields
// the same image digest and an unchanged image is not re-imported.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	image      string
	out        string
	dirs       stringList
	files      stringList
	layerTar   string
	entrypoint string
	cmd        string
	env        stringList
	workdir    string
	user       string
}

func main() {
	var o options
	flag.StringVar(&o.image, "image", "", "image reference, e.g. hangar.local/busybox:v2 (required)")
	flag.StringVar(&o.out, "out", "", "output docker-archive tarball (required)")
	flag.Var(&o.dirs, "dir", "directory whose contents become the image root (repeatable, later wins)")
	flag.Var(&o.files, "file", "SRC:DEST, add one file at absolute path DEST (repeatable)")
	flag.StringVar(&o.layerTar, "tar", "", "an existing uncompressed or gzipped tar to use as the layer instead of -dir/-file")
	flag.StringVar(&o.entrypoint, "entrypoint", "", `entrypoint: a JSON array or a space-separated list`)
	flag.StringVar(&o.cmd, "cmd", "", `default arguments: a JSON array or a space-separated list`)
	flag.Var(&o.env, "env", "KEY=VALUE in the image config (repeatable)")
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.StringVar(&o.user, "user", "", "user to run as")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.image == "" || o.out == "" {
		return fmt.Errorf("-image and -out are required")
	}
	ref, err := name.NewTag(o.image)
	if err != nil {
		return fmt.Errorf("parse image reference %q: %w", o.image, err)
	}
	layer, err := buildLayer(o)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	img, err = withConfig(img, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	// Write to a temporary name first so an interrupted build never leaves a
	// truncated tarball that a later import would trust.
	tmp := o.out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", ref.String(), digest)
	return nil
}

func buildLayer(o options) (v1.Layer, error) {
	if o.layerTar != "" {
		if len(o.dirs) > 0 || len(o.files) > 0 {
			return nil, fmt.Errorf("-tar cannot be combined with -dir or -file")
		}
		layer, err := tarball.LayerFromFile(o.layerTar)
		if err != nil {
			return nil, fmt.Errorf("layer from %s: %w", o.layerTar, err)
		}
		return layer, nil
	}
	if len(o.dirs) == 0 && len(o.files) == 0 {
		return nil, fmt.Errorf("give at least one -dir, -file or -tar")
	}
	w := newLayerWriter()
	for _, dir := range o.dirs {
		if err := w.addDir(dir); err != nil {
			return nil, err
		}
	}
	for _, spec := range o.files {
		src, dest, ok := strings.Cut(spec, ":")
		if !ok || !path.IsAbs(dest) {
			return nil, fmt.Errorf("-file %q: want SRC:/absolute/dest", spec)
		}
		if err := w.addFile(src, dest); err != nil {
			return nil, err
		}
	}
	data, err := w.bytes()
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

func withConfig(img v1.Image, o options) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	// containerd imports only images matching the host platform.
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	if cf.Config.Entrypoint, err = parseArgs(o.entrypoint); err != nil {
		return nil, fmt.Errorf("-entrypoint: %w", err)
	}
	if cf.Config.Cmd, err = parseArgs(o.cmd); err != nil {
		return nil, fmt.Errorf("-cmd: %w", err)
	}
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, o.env...)
	cf.Config.WorkingDir = o.workdir
	cf.Config.User = o.user
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

func parseArgs(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var args []string
		if err := json.Unmarshal([]byte(s), &args); err != nil {
			return nil, err
		}
		return args, nil
	}
	return strings.Fields(s), nil
}

// layerWriter collects entries by path so that later sources override earlier
// ones, then writes them sorted: parents before children, reproducibly.
type layerWriter struct {
	entries map[string]layerEntry
}

type layerEntry struct {
	hdr *tar.Header
	src string // file to copy the content from, for regular files
}

func newLayerWriter() *layerWriter {
	return &layerWriter{entries: map[string]layerEntry{}}
}

var epoch = time.Unix(0, 0).UTC()

func (w *layerWriter) addDir(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		return w.addPath(p, "/"+filepath.ToSlash(rel))
	})
}

func (w *layerWriter) addFile(src, dest string) error {
	w.addParents(dest)
	return w.addPath(src, dest)
}

// addParents adds directory entries for dest's parents that no source
// provided, so that runtimes do not have to invent them with odd modes.
func (w *layerWriter) addParents(dest string) {
	for dir := path.Dir(dest); dir != "/" && dir != "."; dir = path.Dir(dir) {
		key := strings.TrimPrefix(dir, "/")
		if _, ok := w.entries[key]; ok {
			continue
		}
		w.entries[key] = layerEntry{hdr: &tar.Header{
			Typeflag: tar.TypeDir, Name: key + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX,
		}}
	}
}

func (w *layerWriter) addPath(src, dest string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(src); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	key := strings.TrimPrefix(path.Clean(dest), "/")
	hdr.Name = key
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	entry := layerEntry{hdr: hdr}
	switch {
	case info.Mode().IsRegular():
		entry.src = src
	case info.IsDir(), info.Mode()&fs.ModeSymlink != 0:
	default:
		// Device nodes, sockets and fifos have no place in an image layer.
		return nil
	}
	w.entries[key] = entry
	return nil
}

func (w *layerWriter) bytes() ([]byte, error) {
	keys := make([]string, 0, len(w.entries))
	for k := range w.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, k := range keys {
		e := w.entries[k]
		if err := tw.WriteHeader(e.hdr); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", k, err)
		}
		if e.src == "" {
			continue
		}
		if err := copyFile(tw, e.src); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func copyFile(dst io.Writer, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(dst, f); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
