// Command imagebuild packs a root filesystem into a single-layer container
// image and writes it as a docker-archive tarball that `ctr -n k8s.io images
// import` accepts, or pushes it to a registry (the local cluster's, on the
// host: hack/cluster/push.sh), or both.
//
//	imagebuild -image hangar.local/busybox:v2 -out busybox.tar \
//	    -dir rootfs/ -file /bin/busybox:/bin/busybox -entrypoint /bin/sh
//	imagebuild -image 10.216.0.1:15000/hangar/tool:v1 -push -ca _cluster/pki/ca.crt \
//	    -file _output/bin/tool:/usr/bin/tool -entrypoint /usr/bin/tool
//	imagebuild -image 10.216.0.1:15000/other/image:v1 -push -ca _cluster/pki/ca.crt \
//	    -from image.tar
//
// -from takes a whole image built elsewhere (a docker-archive tarball, or an
// OCI image layout as a directory or a tarball) as it is.
//
// Files get uid/gid 0 and a fixed timestamp, so the same input always yields
// the same image digest and an unchanged image is not re-imported. It prints
// "REFERENCE DIGEST" (the manifest's digest, which a push stored): scripts pin
// images by it.
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	image      string
	out        string
	push       bool
	ca         string
	from       string
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
	flag.StringVar(&o.out, "out", "", "output docker-archive tarball (required unless -push)")
	flag.BoolVar(&o.push, "push", false, "push the image to the registry -image names (and write -out too, if given)")
	flag.StringVar(&o.ca, "ca", "", "with -push: trust the registry's certificate only if this CA (PEM file) signed it; default: the system's CAs")
	flag.StringVar(&o.from, "from", "", "a whole image to take as it is instead of building one: a docker-archive tarball, or an OCI image layout (directory or tarball)")
	flag.Var(&o.dirs, "dir", "directory whose contents become the image root (repeatable, later wins)")
	flag.Var(&o.files, "file", "SRC:DEST, add one file at absolute path DEST (repeatable)")
	flag.StringVar(&o.layerTar, "tar", "", "an existing uncompressed or gzipped tar to use as the layer instead of -dir/-file")
	flag.StringVar(&o.entrypoint, "entrypoint", "", `entrypoint: a JSON array or a space-separated list`)
	flag.StringVar(&o.cmd, "cmd", "", `default arguments: a JSON array or a space-separated list`)
	flag.Var(&o.env, "env", "KEY=VALUE in the image config (repeatable)")
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.StringVar(&o.user, "user", "", "user to run as")
	flag.Parse()

	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// run builds or loads the image, writes or pushes it, and prints "REFERENCE DIGEST" to stdout.
func run(o options, stdout io.Writer) error {
	if o.image == "" || (o.out == "" && !o.push) {
		return fmt.Errorf("-image and -out or -push are required")
	}
	if o.ca != "" && !o.push {
		return fmt.Errorf("-ca goes with -push")
	}
	// A pushed image names its registry and tag: nothing defaults to Docker Hub or latest.
	strict := name.WeakValidation
	if o.push {
		strict = name.StrictValidation
	}
	ref, err := name.NewTag(o.image, strict)
	if err != nil {
		return fmt.Errorf("parse image reference %q: %w", o.image, err)
	}
	var artifact remote.Taggable
	if o.from != "" {
		if o.builds() {
			return fmt.Errorf("-from takes a whole image: it cannot be combined with -dir, -file, -tar or the config flags")
		}
		from, cleanup, err := loadImage(o.from)
		if err != nil {
			return err
		}
		defer cleanup()
		artifact = from
	} else {
		img, err := build(o)
		if err != nil {
			return err
		}
		artifact = img
	}
	if o.out != "" {
		img, ok := artifact.(v1.Image)
		if !ok {
			return fmt.Errorf("-out writes a single image; %s holds an image index (push it instead)", o.from)
		}
		if err := writeTarball(o.out, ref, img); err != nil {
			return err
		}
	}
	if o.push {
		if err := push(ref, artifact, o.ca); err != nil {
			return err
		}
	}
	digest, err := manifestDigest(artifact)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s %s\n", ref.String(), digest)
	return err
}

// builds says whether a flag asks for an image to be built.
func (o options) builds() bool {
	return len(o.dirs) > 0 || len(o.files) > 0 || o.layerTar != "" || o.entrypoint != "" || o.cmd != "" ||
		len(o.env) > 0 || o.workdir != "" || o.user != ""
}

// build makes the single-layer image the flags describe.
func build(o options) (v1.Image, error) {
	layer, err := buildLayer(o)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return withConfig(img, o)
}

// writeTarball writes a docker-archive, under a temporary name first so an interrupted build
// never leaves a truncated tarball that a later import would trust.
func writeTarball(out string, ref name.Tag, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}

// manifestDigest is the digest of an image's or index's manifest: what a registry stores it
// under, and what a pod pins.
func manifestDigest(t remote.Taggable) (v1.Hash, error) {
	raw, err := t.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(raw))
	return digest, err
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
