package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// loadImage reads a whole image built elsewhere: a docker-archive tarball (docker save,
// imagebuild -out) with one image, or an OCI image layout, as a directory or as a tarball of
// one (docker buildx --output type=oci), whose index.json names one image or image index.
// cleanup removes what loading unpacked; call it once the image has been written.
func loadImage(file string) (img remote.Taggable, cleanup func(), err error) {
	cleanup = func() {}
	info, err := os.Stat(file)
	if err != nil {
		return nil, cleanup, err
	}
	if info.IsDir() {
		img, err = fromLayout(file)
		return img, cleanup, err
	}
	isLayout, err := isLayoutTarball(file)
	if err != nil {
		return nil, cleanup, err
	}
	if !isLayout {
		image, err := tarball.ImageFromPath(file, nil)
		if err != nil {
			return nil, cleanup, fmt.Errorf("docker-archive %s: %w", file, err)
		}
		return image, cleanup, nil
	}
	dir, err := os.MkdirTemp("", "imagebuild-layout-")
	if err != nil {
		return nil, cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if err := untar(file, dir); err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("unpack %s: %w", file, err)
	}
	img, err = fromLayout(dir)
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("%s: %w", file, err)
	}
	return img, cleanup, nil
}

// fromLayout is the one image or image index an OCI layout's index.json names.
func fromLayout(dir string) (remote.Taggable, error) {
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(manifest.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s: index.json names %d manifests; want one", dir, len(manifest.Manifests))
	}
	desc := manifest.Manifests[0]
	switch {
	case desc.MediaType.IsImage():
		return index.Image(desc.Digest)
	case desc.MediaType.IsIndex():
		return index.ImageIndex(desc.Digest)
	}
	return nil, fmt.Errorf("OCI layout %s: %s is a %s, neither an image nor an index", dir, desc.Digest, desc.MediaType)
}

// isLayoutTarball says whether a tarball holds an OCI layout (its oci-layout file) rather than
// a docker archive (manifest.json); a tarball may hold both (docker save of Docker 25+), and
// then the docker archive is read.
func isLayoutTarball(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	layout := false
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return layout, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", file, err)
		}
		switch path.Clean(hdr.Name) {
		case "manifest.json":
			return false, nil
		case "oci-layout":
			layout = true
		}
	}
}

// untar unpacks a tarball's directories and regular files below dir (an OCI layout holds
// nothing else).
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%s: a path outside the layout", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
