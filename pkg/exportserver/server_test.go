package exportserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	token  = "s3cret-token"
	secret = "THE-SECRET-OUTSIDE-THE-VOLUME"
)

// fixture is a server over temporary volumes next to a file that none of them may reveal.
type fixture struct {
	t         *testing.T
	srv       *httptest.Server
	tokenFile string
	disk      []byte
	now       time.Time
}

// newFixture makes, under one directory:
//
//	secret.txt                      the file no request may reveal
//	token                           the export's token
//	kv/disk.img                     a kubevirt volume
//	kv-escape/disk.img -> ../secret.txt
//	kv-fifo/disk.img                a FIFO
//	blk.img                         the block volume's "device"
//	arch/a.txt, arch/sub/b.txt, arch/lost+found/x, arch/link-out -> ../secret.txt,
//	arch/sub/link-up -> ../../secret.txt, arch/link-in -> a.txt, arch/fifo
func newFixture(t *testing.T) *fixture {
	base := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	symlink := func(target, name string) {
		p := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	disk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	disk[100] = 'X'
	write("secret.txt", secret)
	write("token", token+"\n")
	write("kv/disk.img", string(disk))
	symlink("../secret.txt", "kv-escape/disk.img")
	write("blk.img", string(disk))
	write("arch/a.txt", "alpha")
	write("arch/sub/b.txt", "beta")
	write("arch/lost+found/x", "lost")
	symlink("../secret.txt", "arch/link-out")
	symlink(filepath.Join(base, "secret.txt"), "arch/link-abs")
	symlink("../../secret.txt", "arch/sub/link-up")
	symlink("a.txt", "arch/link-in")
	require.NoError(t, os.MkdirAll(filepath.Join(base, "kv-fifo"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(base, "kv-fifo/disk.img"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(base, "arch/fifo"), 0o644))

	f := &fixture{t: t, tokenFile: filepath.Join(base, "token"), disk: disk, now: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	h, err := New(Config{
		Volumes: []Volume{
			{Name: "kv", Kind: KindKubeVirt, Path: filepath.Join(base, "kv")},
			{Name: "kv-escape", Kind: KindKubeVirt, Path: filepath.Join(base, "kv-escape")},
			{Name: "kv-fifo", Kind: KindKubeVirt, Path: filepath.Join(base, "kv-fifo")},
			{Name: "blk", Kind: KindBlock, Path: filepath.Join(base, "blk.img")},
			{Name: "arch", Kind: KindArchive, Path: filepath.Join(base, "arch")},
		},
		TokenFile: f.tokenFile,
		Expires:   time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
		Now:       func() time.Time { return f.now },
	})
	require.NoError(t, err)
	f.srv = httptest.NewTLSServer(h)
	f.srv.Client().Timeout = 5 * time.Second // a FIFO opened blocking would hang a request
	t.Cleanup(f.srv.Close)
	// A handler blocked opening a FIFO would keep Close waiting forever: a writer frees it,
	// and the request's timeout has failed the test.
	t.Cleanup(func() {
		for _, fifo := range []string{"kv-fifo/disk.img", "arch/fifo"} {
			if w, err := os.OpenFile(filepath.Join(base, fifo), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	})
	return f
}

type req struct {
	method, path string
	header       http.Header
}

// do sends r (path may hold a query and raw escapes, sent as they are) and returns the
// response with its whole body.
func (f *fixture) do(r req) (*http.Response, []byte) {
	f.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	hr, err := http.NewRequest(r.method, f.srv.URL+r.path, nil)
	require.NoError(f.t, err)
	for k, v := range r.header {
		hr.Header[k] = v
	}
	resp, err := f.srv.Client().Do(hr)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp, body
}

func withToken(t string) http.Header { return http.Header{"X-Kubevirt-Export-Token": {t}} }

func TestAuth(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		req  req
		want int
	}{
		{"no token", req{path: "/volumes/kv/disk.img"}, http.StatusUnauthorized},
		{"wrong token in the header", req{path: "/volumes/kv/disk.img", header: withToken("nope")}, http.StatusUnauthorized},
		{"wrong token in the query", req{path: "/volumes/kv/disk.img?x-kubevirt-export-token=nope"}, http.StatusUnauthorized},
		{"a prefix of the token", req{path: "/volumes/kv/disk.img", header: withToken(token[:4])}, http.StatusUnauthorized},
		{"the token with its newline", req{path: "/volumes/kv/disk.img", header: withToken(token + " x")}, http.StatusUnauthorized},
		{"right token in the header", req{path: "/volumes/kv/disk.img", header: withToken(token)}, http.StatusOK},
		{"right token in the query", req{path: "/volumes/kv/disk.img?x-kubevirt-export-token=" + token}, http.StatusOK},
		{"healthz needs none", req{path: "/healthz"}, http.StatusOK},
		{"unknown volume", req{path: "/volumes/nope/disk.img", header: withToken(token)}, http.StatusNotFound},
		{"unknown volume needs the token first", req{path: "/volumes/nope/disk.img"}, http.StatusUnauthorized},
		{"outside /volumes", req{path: "/kv/disk.img", header: withToken(token)}, http.StatusNotFound},
		{"POST", req{method: http.MethodPost, path: "/volumes/kv/disk.img", header: withToken(token)}, http.StatusMethodNotAllowed},
		{"PUT", req{method: http.MethodPut, path: "/volumes/arch/dir/a.txt", header: withToken(token)}, http.StatusMethodNotAllowed},
		{"a disk has no listing", req{path: "/volumes/kv/dir/", header: withToken(token)}, http.StatusNotFound},
		{"a disk has no tarball", req{path: "/volumes/kv/disk.tar.gz", header: withToken(token)}, http.StatusNotFound},
		{"an archive has no disk.img.gz", req{path: "/volumes/arch/disk.img.gz", header: withToken(token)}, http.StatusNotFound},
		{"an archive's empty path", req{path: "/volumes/arch/", header: withToken(token)}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(tc.req)
			assert.Equal(t, tc.want, resp.StatusCode, string(body))
		})
	}
}

func TestDisk(t *testing.T) {
	f := newFixture(t)
	for _, vol := range []string{"kv", "blk"} {
		t.Run(vol, func(t *testing.T) {
			path := "/volumes/" + vol + "/disk.img"
			resp, body := f.do(req{path: path, header: withToken(token)})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, f.disk, body)

			h := withToken(token)
			h.Set("Range", "bytes=96-111")
			resp, body = f.do(req{path: path, header: h})
			require.Equal(t, http.StatusPartialContent, resp.StatusCode)
			assert.Equal(t, f.disk[96:112], body)
			assert.Equal(t, "bytes 96-111/65536", resp.Header.Get("Content-Range"))

			resp, body = f.do(req{method: http.MethodHead, path: path, header: withToken(token)})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, int64(len(f.disk)), resp.ContentLength)
			assert.Empty(t, body)

			resp, body = f.do(req{path: path + ".gz", header: withToken(token)})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "application/gzip", resp.Header.Get("Content-Type"))
			zr, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err)
			raw, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, f.disk, raw)
		})
	}
}

func TestArchive(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, path string
		want       int
		body       string   // the whole body, when set
		contains   []string // parts of the body
		excludes   []string
	}{
		{name: "a file under dir/", path: "/volumes/arch/dir/a.txt", want: 200, body: "alpha"},
		{name: "a file in place of dir", path: "/volumes/arch/a.txt", want: 200, body: "alpha"},
		{name: "a file in a sub-directory", path: "/volumes/arch/dir/sub/b.txt", want: 200, body: "beta"},
		{name: "the same, in place of dir", path: "/volumes/arch/sub/b.txt", want: 200, body: "beta"},
		{name: "a link inside the volume", path: "/volumes/arch/dir/link-in", want: 200, body: "alpha"},
		{
			name: "the listing", path: "/volumes/arch/dir/", want: 200,
			contains: []string{`<a href="a.txt">a.txt</a>`, `<a href="sub/">sub/</a>`},
			excludes: []string{"link-out", "link-in", "link-abs", "lost+found", "fifo"},
		},
		{
			name: "the listing without a slash links through dir", path: "/volumes/arch/dir", want: 200,
			contains: []string{`<a href="dir/a.txt">a.txt</a>`, `<a href="dir/sub/">sub/</a>`},
		},
		{
			name: "a sub-directory's listing", path: "/volumes/arch/dir/sub/", want: 200,
			contains: []string{`<a href="b.txt">b.txt</a>`}, excludes: []string{"link-up", "a.txt"},
		},
		{name: "a sub-directory in place of dir", path: "/volumes/arch/sub/", want: 200, contains: []string{`<a href="b.txt">b.txt</a>`}},
		{name: "a missing file", path: "/volumes/arch/dir/nope.txt", want: 404},
		{name: "a FIFO", path: "/volumes/arch/dir/fifo", want: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(req{path: tc.path, header: withToken(token)})
			require.Equal(t, tc.want, resp.StatusCode, string(body))
			if tc.body != "" {
				assert.Equal(t, tc.body, string(body))
			}
			for _, s := range tc.contains {
				assert.Contains(t, string(body), s)
			}
			for _, s := range tc.excludes {
				assert.NotContains(t, string(body), s)
			}
		})
	}
}

func TestArchiveHead(t *testing.T) {
	f := newFixture(t)
	resp, body := f.do(req{method: http.MethodHead, path: "/volumes/arch/dir/a.txt", header: withToken(token)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(len("alpha")), resp.ContentLength)
	assert.Empty(t, body)
}

func TestTarball(t *testing.T) {
	f := newFixture(t)
	resp, body := f.do(req{path: "/volumes/arch/disk.tar.gz", header: withToken(token)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		got[h.Name] = string(b)
	}
	assert.Equal(t, map[string]string{"a.txt": "alpha", "sub/": "", "sub/b.txt": "beta"}, got)
}

// TestEscapes asks for the secret outside the volumes every way there is: none may give it.
func TestEscapes(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, path string
	}{
		{"dot-dot under dir", "/volumes/arch/dir/../secret.txt"},
		{"dot-dot in place of dir", "/volumes/arch/../secret.txt"},
		{"dot-dots to the volume's parent", "/volumes/arch/dir/../../../secret.txt"},
		{"escaped dot-dots", "/volumes/arch/dir/%2e%2e/secret.txt"},
		{"escaped slashes", "/volumes/arch/dir/..%2fsecret.txt"},
		{"an absolute path", "/volumes/arch/dir//" + "etc/passwd"},
		{"a link out of the volume", "/volumes/arch/dir/link-out"},
		{"an absolute link", "/volumes/arch/dir/link-abs"},
		{"a link up from a sub-directory", "/volumes/arch/sub/link-up"},
		{"a disk image linked out of its volume", "/volumes/kv-escape/disk.img"},
		{"the same, gzipped", "/volumes/kv-escape/disk.img.gz"},
		{"a disk image that is a FIFO", "/volumes/kv-fifo/disk.img"},
		{"dot-dot in a disk's path", "/volumes/kv/../kv-escape/disk.img"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(req{path: tc.path, header: withToken(token)})
			assert.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, resp.StatusCode)
			assert.NotContains(t, string(body), secret)
		})
	}
	// Nor may a tarball or listing carry it.
	for _, path := range []string{"/volumes/arch/disk.tar.gz", "/volumes/arch/dir/", "/volumes/arch/dir/sub/"} {
		_, body := f.do(req{path: path, header: withToken(token)})
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
			require.NoError(t, err)
		}
		assert.NotContains(t, string(body), secret, path)
	}
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)
	f.now = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for _, path := range []string{"/volumes/kv/disk.img", "/volumes/arch/disk.tar.gz", "/volumes/arch/dir/a.txt", "/volumes/nope/disk.img"} {
		resp, _ := f.do(req{path: path, header: withToken(token)})
		assert.Equal(t, http.StatusGone, resp.StatusCode, path)
	}
	resp, _ := f.do(req{path: "/healthz"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the readiness probe outlives the export")
}

// TestTokenRotation rotates the token as the kubelet does a Secret volume: the file is a
// link through ..data, a link swapped to a new directory.
func TestTokenRotation(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	rotate := func(content string) {
		gen := filepath.Join(dir, "gen-"+time.Now().Format("150405.000000000"))
		require.NoError(t, os.Mkdir(gen, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(gen, "token"), []byte(content), 0o644))
		tmp := filepath.Join(dir, "..data_tmp")
		require.NoError(t, os.Symlink(filepath.Base(gen), tmp))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	}
	rotate("first\n")
	require.NoError(t, os.Remove(f.tokenFile))
	require.NoError(t, os.Symlink(filepath.Join(dir, "..data", "token"), f.tokenFile))

	status := func(tok string) int {
		resp, _ := f.do(req{path: "/volumes/arch/dir/a.txt", header: withToken(tok)})
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, status("first"))
	rotate("second\r\n")
	assert.Equal(t, http.StatusOK, status("second"))
	assert.Equal(t, http.StatusUnauthorized, status("first"))

	rotate("")
	for _, tok := range []string{"", "first", "second", " "} {
		assert.Equal(t, http.StatusUnauthorized, status(tok), "token %q with an empty token file", tok)
	}
	rotate("\n")
	resp, _ := f.do(req{path: "/volumes/arch/dir/a.txt?x-kubevirt-export-token=%0A"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a token file of a newline is empty")
}

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name string
		vols []Volume
	}{
		{"a missing directory", []Volume{{Name: "a", Kind: KindArchive, Path: filepath.Join(dir, "nope")}}},
		{"a file for a directory", []Volume{{Name: "a", Kind: KindKubeVirt, Path: file}}},
		{"a missing device", []Volume{{Name: "a", Kind: KindBlock, Path: filepath.Join(dir, "nope")}}},
		{"a name twice", []Volume{{Name: "a", Kind: KindArchive, Path: dir}, {Name: "a", Kind: KindKubeVirt, Path: dir}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Volumes: tc.vols})
			assert.Error(t, err)
		})
	}
}
