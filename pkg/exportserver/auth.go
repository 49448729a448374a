package exportserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"

	"k8s.io/klog/v2"
)

// TokenName is the header and the query parameter a client passes the export's token in
// (KubeVirt's wire).
const TokenName = "x-kubevirt-export-token"

// requestToken is the token of r: the header's, else the query parameter's.
func requestToken(r *http.Request) string {
	if t := r.Header.Get(TokenName); t != "" {
		return t
	}
	return r.URL.Query().Get(TokenName)
}

// readToken reads the export's token. The file is a Secret volume's, which the kubelet
// rotates by swapping a symbolic link: reading it per request sees the new token at once,
// and the file is a few bytes.
func readToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return strings.TrimRight(string(b), " \t\r\n"), nil
}

// checkToken says why r may not read the export, or "" when it may. An empty token (in the
// request or the file) never matches.
func (s *Server) checkToken(r *http.Request) string {
	got := requestToken(r)
	if got == "" {
		return "missing export token"
	}
	want, err := readToken(s.cfg.TokenFile)
	if err != nil {
		klog.ErrorS(err, "Export token unavailable", "file", s.cfg.TokenFile)
		return "export token unavailable"
	}
	if want == "" {
		return "no export token is set"
	}
	// Hashing first makes the comparison's time independent of the lengths too.
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 {
		return "wrong export token"
	}
	return ""
}

// expired says whether the export's time is over; a zero Expires never is.
func (s *Server) expired() bool {
	return !s.cfg.Expires.IsZero() && !s.cfg.Now().Before(s.cfg.Expires)
}
