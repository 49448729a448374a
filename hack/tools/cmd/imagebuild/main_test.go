package main

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testRegistry is an in-memory registry over TLS, and a file with its certificate for -ca.
func testRegistry(t *testing.T) (host, caFile string, get func(ref string) *remote.Descriptor) {
	t.Helper()
	quiet := log.New(io.Discard, "", 0)
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(quiet)))
	// The refused handshakes of TestPushTrustsOnlyTheCA are expected.
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.crt")
	writeCert(t, caFile, srv.Certificate())
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	host = strings.TrimPrefix(srv.URL, "https://")
	get = func(ref string) *remote.Descriptor {
		t.Helper()
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Get(r, remote.WithTransport(transport))
		if err != nil {
			t.Fatalf("get %s from the registry: %v", ref, err)
		}
		return desc
	}
	return host, caFile, get
}

// mustSelfSigned is a CA that signed nothing.
func mustSelfSigned(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func writeCert(t *testing.T, file string, cert *x509.Certificate) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runImagebuild runs imagebuild and returns the digest it printed for o.image.
func runImagebuild(t *testing.T, o options) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatalf("imagebuild: %v", err)
	}
	ref, digest, ok := strings.Cut(strings.TrimSpace(out.String()), " ")
	if !ok || ref != o.image {
		t.Fatalf("imagebuild printed %q; want %q DIGEST", out.String(), o.image)
	}
	return digest
}

func testFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(file, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestPush: a built image pushed with -push and written with -out is the same image, under
// the digest imagebuild prints, and building it again gives that digest again.
func TestPush(t *testing.T) {
	host, ca, get := testRegistry(t)
	file := testFile(t, "hello")
	out := filepath.Join(t.TempDir(), "hello.tar")
	o := options{image: host + "/test/hello:v1", push: true, ca: ca, out: out,
		files: stringList{file + ":/usr/bin/hello"}, entrypoint: "/usr/bin/hello"}
	digest := runImagebuild(t, o)

	if got := get(o.image).Digest.String(); got != digest {
		t.Errorf("registry has %s under %s; imagebuild printed %s", got, o.image, digest)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := img.Digest(); got.String() != digest {
		t.Errorf("-out holds %s; imagebuild printed %s", got, digest)
	}
	if again := runImagebuild(t, o); again != digest {
		t.Errorf("the same input built %s, then %s", digest, again)
	}
}

// TestPushTrustsOnlyTheCA: a registry whose certificate the -ca did not sign is refused.
func TestPushTrustsOnlyTheCA(t *testing.T) {
	host, _, _ := testRegistry(t)
	otherCA := filepath.Join(t.TempDir(), "other.crt")
	writeCert(t, otherCA, mustSelfSigned(t))
	err := run(options{image: host + "/test/hello:v1", push: true, ca: otherCA,
		files: stringList{testFile(t, "hello") + ":/hello"}}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("push to a registry the CA did not sign: %v; want a certificate error", err)
	}
}

// TestPushNeedsRegistryAndTag: a pushed image's name says where it goes and which tag it is.
func TestPushNeedsRegistryAndTag(t *testing.T) {
	for _, image := range []string{"hangar/virt-api:v1", "10.216.0.1:15000/hangar/virt-api"} {
		err := run(options{image: image, push: true, files: stringList{testFile(t, "x") + ":/x"}}, io.Discard)
		if err == nil {
			t.Errorf("-push -image %s: no error", image)
		}
	}
}

// TestFrom: a whole image, from a docker archive or an OCI layout (directory or tarball;
// image or index), is pushed as it is: under the digest it had.
func TestFrom(t *testing.T) {
	host, ca, get := testRegistry(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "hello.tar")
	built := runImagebuild(t, options{image: "hangar.local/hello:v1", out: archive,
		files: stringList{testFile(t, "hello") + ":/hello"}, entrypoint: "/hello"})
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	index := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img,
		Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	indexDigest, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	imageLayout := writeLayout(t, filepath.Join(dir, "image-layout"), func(p layout.Path) error { return p.AppendImage(img) })
	indexLayout := writeLayout(t, filepath.Join(dir, "index-layout"), func(p layout.Path) error { return p.AppendIndex(index) })

	tests := []struct {
		name, from, want string
	}{
		{"docker archive", archive, built},
		{"OCI layout directory", imageLayout, built},
		{"OCI layout tarball", tarDir(t, imageLayout), built},
		{"OCI layout tarball of an index", tarDir(t, indexLayout), indexDigest.String()},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := host + "/test/from:v" + string(rune('1'+i))
			digest := runImagebuild(t, options{image: ref, push: true, ca: ca, from: tc.from})
			if digest != tc.want {
				t.Errorf("imagebuild printed %s; want %s", digest, tc.want)
			}
			if got := get(ref).Digest.String(); got != tc.want {
				t.Errorf("registry has %s under %s; want %s", got, ref, tc.want)
			}
		})
	}

	t.Run("with build flags", func(t *testing.T) {
		err := run(options{image: host + "/test/from:bad", push: true, ca: ca, from: archive, entrypoint: "/x"}, io.Discard)
		if err == nil {
			t.Fatal("-from with -entrypoint: no error")
		}
	})
	t.Run("index to -out", func(t *testing.T) {
		err := run(options{image: "hangar.local/x:v1", out: filepath.Join(dir, "x.tar"), from: indexLayout}, io.Discard)
		if err == nil {
			t.Fatal("an index written as a docker archive: no error")
		}
	})
}

func writeLayout(t *testing.T, dir string, add func(layout.Path) error) string {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := add(p); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tarDir packs a directory into a tarball beside it.
func tarDir(t *testing.T, dir string) string {
	t.Helper()
	file := dir + ".tar"
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}
