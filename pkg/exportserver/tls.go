package exportserver

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// NewTLSConfig returns the server's TLS configuration: TLS 1.2 at least, the key pair read
// from certFile and keyFile and read again when either file changes, so that a rotated
// Secret takes effect at the next handshake without a restart. It fails when the pair
// cannot be read now.
func NewTLSConfig(certFile, keyFile string) (*tls.Config, error) {
	kp := &keyPair{certFile: certFile, keyFile: keyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() },
	}, nil
}

// keyPair is the key pair of two files, loaded again when either is another file (the
// kubelet swaps a Secret volume's files by a symbolic link) or was modified.
type keyPair struct {
	certFile, keyFile string

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp os.FileInfo
	keyStamp  os.FileInfo
}

func (kp *keyPair) get() (*tls.Certificate, error) {
	certStamp, err1 := os.Stat(kp.certFile)
	keyStamp, err2 := os.Stat(kp.keyFile)
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if err1 == nil && err2 == nil && kp.cert != nil && same(certStamp, kp.certStamp) && same(keyStamp, kp.keyStamp) {
		return kp.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		err = fmt.Errorf("load key pair %s, %s: %w", kp.certFile, kp.keyFile, err)
		if kp.cert == nil {
			return nil, err
		}
		// Mid-rotation the two files may not match yet: keep serving the old pair and
		// try again at the next handshake.
		klog.ErrorS(err, "Keeping the previous key pair")
		return kp.cert, nil
	}
	kp.cert, kp.certStamp, kp.keyStamp = &cert, certStamp, keyStamp
	return kp.cert, nil
}

// same says whether a and b are the same file, unmodified.
func same(a, b os.FileInfo) bool {
	return b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}
