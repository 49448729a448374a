// Package etcd runs an embedded etcd server, the storage of virt-api in local and test
// setups: a real etcd, in-process, with its data in one directory.
package etcd

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// Config says where the embedded etcd keeps its data and listens.
type Config struct {
	// Dir holds the data; it survives restarts.
	Dir string
	// ClientPort and PeerPort are loopback ports; 0 picks a free one.
	ClientPort, PeerPort int
	// UnsafeNoFsync trades durability for speed, for tests only.
	UnsafeNoFsync bool
	// ClientTLS, when set, serves clients over TLS and admits only those presenting a
	// certificate of ClientTLS.TrustedCAFile, as Hangar's deployed etcd does
	// (artifacts/components/etcd.yaml). Without it etcd speaks plain HTTP, on loopback only.
	ClientTLS *TLSFiles
}

// TLSFiles are the PEM files of etcd's client port.
type TLSFiles struct {
	// CertFile and KeyFile are etcd's serving certificate; it must name 127.0.0.1.
	CertFile, KeyFile string
	// TrustedCAFile is the CA whose client certificates etcd accepts.
	TrustedCAFile string
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	// ClientURL is what etcd clients dial.
	ClientURL string
}

// Start starts etcd and waits until it serves clients.
func Start(cfg Config) (*Server, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data dir: %w", err)
	}
	clientPort, err := portOrFree(cfg.ClientPort)
	if err != nil {
		return nil, err
	}
	peerPort, err := portOrFree(cfg.PeerPort)
	if err != nil {
		return nil, err
	}

	ec := embed.NewConfig()
	ec.Name = "hangar"
	ec.Dir = filepath.Join(cfg.Dir, "member-data")
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	if cfg.ClientTLS != nil {
		clientURL.Scheme = "https"
		ec.ClientTLSInfo = transport.TLSInfo{
			CertFile:       cfg.ClientTLS.CertFile,
			KeyFile:        cfg.ClientTLS.KeyFile,
			TrustedCAFile:  cfg.ClientTLS.TrustedCAFile,
			ClientCertAuth: true,
		}
		// As deployed: no JSON gateway beside gRPC; virt-api and etcdctl speak gRPC.
		ec.EnableGRPCGateway = false
	}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	// etcd logs every request's stats as a warning; only its errors matter to virt-api.
	ec.LogLevel = zapcore.ErrorLevel.String()
	// Keep the keyspace small: kube-apiserver compacts through its own client, and so does
	// virt-api's storage layer, but a long-running local etcd also needs its history bounded.
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within 60s", cfg.Dir)
	}
	return &Server{etcd: e, ClientURL: clientURL.String()}, nil
}

// Stop stops etcd; its data stays in the directory.
func (s *Server) Stop() {
	s.etcd.Close()
}

// portOrFree returns port, or a free loopback port when port is 0.
func portOrFree(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
