package handler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/vnc"
)

// Websocket keepalive: a ping every pingPeriod; a peer silent for pongWait is gone.
const (
	pingPeriod = 10 * time.Second
	pongWait   = 30 * time.Second
	writeWait  = 10 * time.Second
)

// Server serves virt-api: the serial console and VNC of an instance as websockets carrying
// raw bytes, and the guest commands pause, unpause and softreboot. Only clients with a
// certificate from the client CA whose common name is allowed (virt-api's) get in.
type Server struct {
	Lister       listers.VirtualMachineInstanceLister
	Sockets      *Sockets
	AllowedNames []string
	// Calls bounds the calls to launchers, shared with the Controller (Controller.Calls).
	Calls *api.CallLimits

	// screenshots bounds the frames decoded at once: each may hold vnc.MaxPixels pixels.
	screenshotsOnce sync.Once
	screenshots     chan struct{}
}

// maxScreenshots is how many screenshots the handler takes at the same time.
const maxScreenshots = 2

// Path prefix of every call; the rest is <namespace>/virtualmachineinstances/<name>/<what>.
const pathPrefix = "/v1/namespaces/"

// Handler routes the calls.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	base := pathPrefix + "{namespace}/virtualmachineinstances/{name}/"
	mux.HandleFunc("GET "+base+"console", s.stream(api.ConsoleSocketName))
	mux.HandleFunc("GET "+base+"vnc", s.stream(api.VNCSocketName))
	mux.HandleFunc("GET "+base+"vnc/screenshot", s.screenshot)
	for verb, call := range map[string]func(*api.Client, context.Context) (api.State, error){
		"pause":      (*api.Client).Pause,
		"unpause":    (*api.Client).Unpause,
		"softreboot": (*api.Client).SoftReboot,
	} {
		mux.HandleFunc("PUT "+base+verb, s.command(call))
	}
	mux.HandleFunc("PUT "+base+"unfreeze", s.command((*api.Client).Unfreeze))
	mux.HandleFunc("PUT "+base+"freeze", s.freeze)
	mux.HandleFunc("GET "+base+"guestosinfo", s.guestInfo(func(info v1.VirtualMachineInstanceGuestAgentInfo) any { return info }))
	mux.HandleFunc("GET "+base+"userlist", s.guestInfo(func(info v1.VirtualMachineInstanceGuestAgentInfo) any {
		return v1.VirtualMachineInstanceGuestOSUserList{Items: append([]v1.VirtualMachineInstanceGuestOSUser{}, info.UserList...)}
	}))
	mux.HandleFunc("GET "+base+"filesystemlist", s.guestInfo(func(info v1.VirtualMachineInstanceGuestAgentInfo) any {
		return v1.VirtualMachineInstanceFileSystemList{Items: append([]v1.VirtualMachineInstanceFileSystem{}, info.FSInfo.Disks...)}
	}))
	return s.authorize(mux)
}

// authorize admits only allowed client certificates (the TLS layer has verified the chain).
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "client certificate required", http.StatusUnauthorized)
			return
		}
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		if !slices.Contains(s.AllowedNames, cn) {
			http.Error(w, fmt.Sprintf("%q may not use virt-handler", cn), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dial connects to one of the sockets of a running instance's launcher pod on this node,
// answering the request itself when it cannot.
func (s *Server) dial(w http.ResponseWriter, r *http.Request, socket string) (net.Conn, bool) {
	_, conn, ok := s.dialInstance(w, r, socket)
	return conn, ok
}

// dialInstance is dial that also returns the instance.
func (s *Server) dialInstance(w http.ResponseWriter, r *http.Request, socket string) (*v1.VirtualMachineInstance, net.Conn, bool) {
	vmi, err := s.Lister.VirtualMachineInstances(r.PathValue("namespace")).Get(r.PathValue("name"))
	switch {
	case apierrors.IsNotFound(err):
		http.Error(w, "no such instance on this node", http.StatusNotFound)
		return nil, nil, false
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, nil, false
	case vmi.Status.Phase != v1.Running:
		http.Error(w, fmt.Sprintf("instance is %s, not Running", vmi.Status.Phase), http.StatusConflict)
		return nil, nil, false
	}
	dir, err := s.Sockets.Dir(vmi)
	if err != nil {
		http.Error(w, fmt.Sprintf("launcher pod: %v", err), http.StatusNotFound)
		return nil, nil, false
	}
	defer dir.Close()
	conn, err := dir.Dial(socket)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, os.ErrNotExist) {
			status = http.StatusNotFound // no console or no VNC on this guest
		} else {
			// A link, a foreign socket, a process of another pod: the launcher pod's
			// contents were tampered with. Refused, and said so in the handler's log.
			klog.InfoS("refused a launcher socket", "vmi", r.PathValue("namespace")+"/"+r.PathValue("name"), "socket", socket, "err", err)
		}
		http.Error(w, fmt.Sprintf("%s: %v", socket, err), status)
		return nil, nil, false
	}
	return vmi, conn, true
}

// screenshot answers with one frame of the instance's display as a PNG.
func (s *Server) screenshot(w http.ResponseWriter, r *http.Request) {
	s.screenshotsOnce.Do(func() { s.screenshots = make(chan struct{}, maxScreenshots) })
	select {
	case s.screenshots <- struct{}{}:
		defer func() { <-s.screenshots }()
	case <-r.Context().Done():
		return
	}
	conn, ok := s.dial(w, r, api.VNCSocketName)
	if !ok {
		return
	}
	defer conn.Close()
	img, err := vnc.Screenshot(conn, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	if err := png.Encode(w, img); err != nil {
		klog.V(2).InfoS("screenshot not sent", "err", err)
	}
}

// launcherClient is a client of the instance's launcher for one call, on a connection
// verified to reach a process of its pod; it answers the request itself when it cannot.
func (s *Server) launcherClient(w http.ResponseWriter, r *http.Request) (*api.Client, bool) {
	vmi, conn, ok := s.dialInstance(w, r, api.SocketName)
	if !ok {
		return nil, false
	}
	// One call on the verified connection: the client dials nothing else.
	used := false
	return s.Calls.Client(string(vmi.UID), func(context.Context) (net.Conn, error) {
		if used {
			return nil, errors.New("launcher connection already used")
		}
		used = true
		return conn, nil
	}), true
}

// launcherError answers with a launcher's refusal: its conflicts (no agent, not running) as
// 409, the rest as 500.
func launcherError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var callErr *api.CallError
	if errors.As(err, &callErr) && callErr.Status == http.StatusConflict {
		status = http.StatusConflict
	}
	http.Error(w, err.Error(), status)
}

func (s *Server) command(call func(*api.Client, context.Context) (api.State, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.launcherClient(w, r)
		if !ok {
			return
		}
		defer c.Close()
		if _, err := call(c, r.Context()); err != nil {
			launcherError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// maxFreezeBody bounds the freeze body: {"unfreezeTimeout":"5m0s"}.
const maxFreezeBody = 1 << 10

// freeze freezes the guest's file systems, with KubeVirt's body: an unfreeze timeout (0:
// none) after which the launcher thaws them by itself.
func (s *Server) freeze(w http.ResponseWriter, r *http.Request) {
	var body v1.FreezeUnfreezeTimeout
	data, err := io.ReadAll(io.LimitReader(r.Body, maxFreezeBody+1))
	if err == nil && len(data) > maxFreezeBody {
		err = errors.New("body too large")
	}
	if err == nil {
		err = json.Unmarshal(data, &body)
	}
	if err != nil || body.UnfreezeTimeout == nil || body.UnfreezeTimeout.Duration < 0 {
		http.Error(w, fmt.Sprintf("freeze needs a body {\"unfreezeTimeout\": DURATION} of at least 0: %v", err), http.StatusBadRequest)
		return
	}
	c, ok := s.launcherClient(w, r)
	if !ok {
		return
	}
	defer c.Close()
	if _, err := c.Freeze(r.Context(), int64(body.UnfreezeTimeout.Duration/time.Second)); err != nil {
		launcherError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// guestInfo answers with what the guest agent reports, checked and bounded (cleanGuestInfo),
// in the shape view gives it.
func (s *Server) guestInfo(view func(v1.VirtualMachineInstanceGuestAgentInfo) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.launcherClient(w, r)
		if !ok {
			return
		}
		defer c.Close()
		info, err := c.GuestInfo(r.Context())
		if err != nil {
			launcherError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(view(cleanGuestInfo(info)))
	}
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	// KubeVirt's clients ask for this subprotocol; bytes are raw either way.
	Subprotocols: []string{"plain.kubevirt.io"},
	// Only virt-api reaches this server (client certificates); browsers never do directly.
	CheckOrigin: func(*http.Request) bool { return true },
}

// stream bridges a websocket to one of the instance's unix sockets.
func (s *Server) stream(socket string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, ok := s.dial(w, r, socket)
		if !ok {
			return
		}
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			conn.Close()
			return // Upgrade has answered
		}
		klog.V(2).InfoS("stream opened", "socket", socket, "vmi", r.PathValue("namespace")+"/"+r.PathValue("name"))
		Bridge(ws, conn)
	}
}

// Bridge copies between a websocket and a stream until either ends, with pings, then
// closes both ends: a normal close frame to the websocket peer, and the stream.
func Bridge(ws *websocket.Conn, conn net.Conn) {
	done := make(chan struct{})
	fromStreamDone := make(chan struct{})
	_ = ws.SetReadDeadline(time.Now().Add(pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pongWait)) })

	// stream → websocket, and pings; the only writer of data frames.
	go func() {
		defer close(fromStreamDone)
		buf := make([]byte, 32<<10)
		reads := make(chan []byte)
		readErr := make(chan error, 1)
		go func() {
			for {
				n, err := conn.Read(buf)
				if n > 0 {
					b := append([]byte(nil), buf[:n]...)
					select {
					case reads <- b:
					case <-done:
						return
					}
				}
				if err != nil {
					readErr <- err
					return
				}
			}
		}()
		ping := time.NewTicker(pingPeriod)
		defer ping.Stop()
		for {
			select {
			case b := <-reads:
				_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
				if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
					return
				}
			case <-ping.C:
				if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
					return
				}
			case <-readErr:
				return
			case <-done:
				return
			}
		}
	}()

	// websocket → stream, each write bounded: a launcher that stops reading (the tenant's)
	// ends the stream instead of holding it.
	go func() {
		defer close(done)
		for {
			_, r, err := ws.NextReader()
			if err != nil {
				return
			}
			if _, err := io.Copy(deadlineWriter{conn}, r); err != nil {
				return
			}
		}
	}()

	select {
	case <-done:
	case <-fromStreamDone:
	}
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	conn.Close()
	ws.Close()
	<-fromStreamDone
}

// deadlineWriter writes to a connection within writeWait each time.
type deadlineWriter struct{ conn net.Conn }

func (w deadlineWriter) Write(b []byte) (int, error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(writeWait)); err != nil {
		return 0, err
	}
	return w.conn.Write(b)
}

// NodeTLSConfig serves with the node's identity (current: the certificate from virt-controller's
// signer naming this node, package migration/identity), which virt-api checks names the node
// it dials, and requires client certificates from clientCAFile, read again when it changes.
// Until the node has its identity, handshakes fail and virt-api retries.
func NodeTLSConfig(current func() *tls.Certificate, clientCAFile string) (*tls.Config, error) {
	clientCAs := &tlsFiles{caFile: clientCAFile}
	if _, err := clientCAs.clientPool(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			pool, err := clientCAs.clientPool()
			if err != nil {
				return nil, err
			}
			return &tls.Config{
				GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
					if c := current(); c != nil {
						return c, nil
					}
					return nil, errors.New("this node has no identity yet")
				},
				ClientAuth: tls.RequireAndVerifyClientCert,
				ClientCAs:  pool,
				MinVersion: tls.VersionTLS12,
			}, nil
		},
	}, nil
}

// TLSConfig serves with certFile/keyFile and requires client certificates from clientCAFile,
// for development and tests (in a cluster the handler serves with its node identity,
// NodeTLSConfig). The files are read again when they change, so rotated certificates apply
// without a restart.
func TLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	r := &tlsFiles{certFile: certFile, keyFile: keyFile, caFile: clientCAFile}
	if _, err := r.config(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.config() },
	}, nil
}

// tlsFiles is the serving certificate and client CA, reloaded when a file's mtime changes.
type tlsFiles struct {
	certFile, keyFile, caFile string

	mu      sync.Mutex
	stamp   string
	current *tls.Config
}

// clientPool is the client CA bundle alone, read again when its file changes.
func (r *tlsFiles) clientPool() (*x509.CertPool, error) {
	fi, err := os.Stat(r.caFile)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil && r.stamp == fi.ModTime().String() {
		return r.current.ClientCAs, nil
	}
	pem, err := os.ReadFile(r.caFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA %s: no certificates", r.caFile)
	}
	r.current, r.stamp = &tls.Config{ClientCAs: pool}, fi.ModTime().String()
	return pool, nil
}

func (r *tlsFiles) config() (*tls.Config, error) {
	stamp := ""
	for _, f := range []string{r.certFile, r.keyFile, r.caFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		stamp += fi.ModTime().String() + "/"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil && stamp == r.stamp {
		return r.current, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	pem, err := os.ReadFile(r.caFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA %s: no certificates", r.caFile)
	}
	r.current = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	r.stamp = stamp
	return r.current, nil
}
