// Package nodeclient is virt-api's client for virt-handler: it finds the handler of a node
// and talks to it over mutual TLS, for guest commands and console/VNC streams.
package nodeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// ServerName is the name virt-handler's serving certificate carries, whatever the pod's
// address: handlers are reached by pod IP.
const ServerName = "virt-handler"

// Config says how to find and reach handlers.
type Config struct {
	// Namespace and Selector find the handler pods (one per node).
	Namespace, Selector string
	// Port is the handler's HTTPS port.
	Port int
	// StaticAddress, when set, is used for every node (development and tests).
	StaticAddress string
	// CAFile verifies handlers; CertFile and KeyFile are virt-api's client certificate.
	CAFile, CertFile, KeyFile string
}

// Client reaches the handlers of a cluster.
type Client struct {
	cfg       Config
	kube      kubernetes.Interface
	transport *http.Transport
	http      *http.Client
}

// New returns a client; kube may be nil when StaticAddress is set.
func New(cfg Config, kube kubernetes.Interface) (*Client, error) {
	tlsConfig, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Client{cfg: cfg, kube: kube, transport: transport, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}, nil
}

func clientTLS(cfg Config) (*tls.Config, error) {
	tlsConfig := &tls.Config{ServerName: ServerName, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read handler CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", cfg.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
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
	return tlsConfig, nil
}

// Transport carries requests and upgraded streams to handlers.
func (c *Client) Transport() *http.Transport { return c.transport }

// InstanceURL is the handler URL of one call for an instance on a node.
func (c *Client) InstanceURL(ctx context.Context, node, namespace, name, call string) (*url.URL, error) {
	base, err := c.handlerBase(ctx, node)
	if err != nil {
		return nil, err
	}
	base.Path = fmt.Sprintf("/v1/namespaces/%s/virtualmachineinstances/%s/%s", namespace, name, call)
	return base, nil
}

func (c *Client) handlerBase(ctx context.Context, node string) (*url.URL, error) {
	if c.cfg.StaticAddress != "" {
		return url.Parse(c.cfg.StaticAddress)
	}
	if c.kube == nil {
		return nil, fmt.Errorf("no cluster to find the virt-handler of node %s in", node)
	}
	pods, err := c.kube.CoreV1().Pods(c.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: c.cfg.Selector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("find the virt-handler of node %s: %w", node, err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
			return &url.URL{Scheme: "https", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(c.cfg.Port))}, nil
		}
	}
	return nil, fmt.Errorf("no running virt-handler on node %s", node)
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
	resp, err := c.http.Do(req)
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
