// Package nodeclient is virt-api's client for virt-handler: it finds the handler of a node
// and talks to it over mutual TLS, for guest commands and console/VNC streams.
//
// Every handler serves with its node's own identity (package migration/identity: a key of its
// own, a certificate from virt-controller's signer naming its node, which only that node's
// handler can get), and virt-api checks that the handler it reaches holds the identity of the
// node it meant to reach. A handler's key opens no other node's instances, and a compromised
// node cannot pass for another by answering at its address.
package nodeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// Config says how to find and reach handlers.
type Config struct {
	// Namespace and Selector find the handler pods (one per node).
	Namespace, Selector string
	// Port is the handler's HTTPS port.
	Port int
	// StaticAddress, when set, is dialled for every node (development and tests); the
	// handler there must still hold the identity of the node asked for.
	StaticAddress string
	// CAFile verifies the handlers' node identities (the CA of virt-controller's signer
	// identity.SignerName), read again when it changes; CertFile and KeyFile are virt-api's
	// client certificate.
	CAFile, CertFile, KeyFile string
}

// Client reaches the handlers of a cluster.
type Client struct {
	cfg  Config
	kube kubernetes.Interface
	ca   *caFile

	mu        sync.Mutex
	caStamp   time.Time
	transport *http.Transport
}

// New returns a client; kube may be nil when StaticAddress is set.
func New(cfg Config, kube kubernetes.Interface) (*Client, error) {
	c := &Client{cfg: cfg, kube: kube}
	if cfg.CAFile != "" {
		c.ca = &caFile{path: cfg.CAFile}
	}
	if _, err := c.currentTransport(); err != nil {
		return nil, err
	}
	return c, nil
}

// currentTransport is the transport for the CA as its file has it now: a rotated CA makes a
// new one (and drops the old one's idle connections), without a restart.
func (c *Client) currentTransport() (*http.Transport, error) {
	var pool *x509.CertPool
	var stamp time.Time
	if c.ca != nil {
		var err error
		if pool, stamp, err = c.ca.pool(); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transport != nil && stamp.Equal(c.caStamp) {
		return c.transport, nil
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		TLSClientConfig: clientTLS(c.cfg, pool),
		// URLs name the node (its identity is what TLS checks); the address is the node's
		// handler pod's, found when dialling.
		DialContext: func(ctx context.Context, network, nodeAddr string) (net.Conn, error) {
			node, _, err := net.SplitHostPort(nodeAddr)
			if err != nil {
				return nil, err
			}
			addr, err := c.handlerAddress(ctx, node)
			if err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
	c.transport, c.caStamp = t, stamp
	return t, nil
}

// clientTLS verifies a handler's certificate against roots for the node in the URL (TLS takes
// the server name from it), and requires it to be that node's identity (identity.NodeOf).
func clientTLS(cfg Config, roots *x509.CertPool) *tls.Config {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots,
		VerifyConnection: func(cs tls.ConnectionState) error { return VerifyNode(cs) }}
	if cfg.CertFile != "" {
		// Reloaded on every handshake, so rotated certificates take effect without a restart.
		tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("load client certificate for virt-handler: %w", err)
			}
			return &cert, nil
		}
	}
	return tlsConfig
}

// VerifyNode checks that a handler's certificate, verified by TLS for the server name, is the
// node identity of that node: a certificate of the same CA that names the node otherwise is
// not.
func VerifyNode(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 || cs.ServerName == "" {
		return errors.New("virt-handler: no certificate, or no node to check it against")
	}
	node, err := identity.NodeOf(cs.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("virt-handler of node %s: %w", cs.ServerName, err)
	}
	if node != cs.ServerName {
		return fmt.Errorf("virt-handler of node %s presented the identity of node %s", cs.ServerName, node)
	}
	return nil
}

// caFile is a CA bundle read again when its file changes.
type caFile struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	current *x509.CertPool
}

func (f *caFile) pool() (*x509.CertPool, time.Time, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("handler CA: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current != nil && fi.ModTime().Equal(f.modTime) {
		return f.current, f.modTime, nil
	}
	pem, err := os.ReadFile(f.path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read handler CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, time.Time{}, fmt.Errorf("no certificate in %s", f.path)
	}
	f.current, f.modTime = pool, fi.ModTime()
	return pool, f.modTime, nil
}

// Transport carries requests and upgraded streams to handlers.
func (c *Client) Transport() *http.Transport {
	t, err := c.currentTransport()
	if err != nil {
		// The CA file is unreadable for now: the last good transport still verifies.
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.transport
	}
	return t
}

// InstanceURL is the handler URL of one call for an instance on a node: its host is the node,
// whose identity the handler must hold.
func (c *Client) InstanceURL(_ context.Context, node, namespace, name, call string) (*url.URL, error) {
	if node == "" {
		return nil, errors.New("the instance has no node")
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(node, strconv.Itoa(c.cfg.Port)),
		Path: fmt.Sprintf("/v1/namespaces/%s/virtualmachineinstances/%s/%s", namespace, name, call)}, nil
}

// handlerAddress is where node's handler listens: its running pod's address.
func (c *Client) handlerAddress(ctx context.Context, node string) (string, error) {
	if c.cfg.StaticAddress != "" {
		u, err := url.Parse(c.cfg.StaticAddress)
		if err != nil {
			return "", err
		}
		return u.Host, nil
	}
	if c.kube == nil {
		return "", fmt.Errorf("no cluster to find the virt-handler of node %s in", node)
	}
	pods, err := c.kube.CoreV1().Pods(c.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: c.cfg.Selector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return "", fmt.Errorf("find the virt-handler of node %s: %w", node, err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
			return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(c.cfg.Port)), nil
		}
	}
	return "", fmt.Errorf("no running virt-handler on node %s", node)
}

// Put sends a guest command (pause, unpause, softreboot) to the instance's handler.
func (c *Client) Put(ctx context.Context, node, namespace, name, call string) error {
	_, err := c.Call(ctx, node, namespace, name, http.MethodPut, call, nil)
	return err
}

// MaxAnswer bounds what virt-api reads of a handler's answer (a guest agent's report is the
// largest, and the handler bounds it already).
const MaxAnswer = 2 << 20

// Call sends one request for an instance to its node's handler and returns the answer's body.
func (c *Client) Call(ctx context.Context, node, namespace, name, method, call string, body []byte) ([]byte, error) {
	u, err := c.InstanceURL(ctx, node, namespace, name, call)
	if err != nil {
		return nil, err
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: c.Transport(), Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s on node %s: %w", call, node, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &HandlerError{Code: resp.StatusCode, Message: string(msg)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%s on node %s: %w", call, node, err)
	}
	if len(data) > MaxAnswer {
		return nil, fmt.Errorf("%s on node %s: answer larger than %d bytes", call, node, MaxAnswer)
	}
	return data, nil
}

// HandlerError is a refusal from a handler, with its HTTP status.
type HandlerError struct {
	Code    int
	Message string
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("virt-handler answered %d: %s", e.Code, e.Message)
}
