package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// guestDialTimeout bounds the connection to a guest's port.
const guestDialTimeout = 5 * time.Second

// maxDatagram is the largest UDP payload over IPv4.
const maxDatagram = 65507

// forwardAddress says whether the handler may dial addr for a port-forward: an address on
// the pod network, never its own loopback, a link-local, multicast or unspecified address.
// virt-api names the launcher pod's IP from the pod object; this is the node's own check.
func forwardAddress(addr netip.Addr) error {
	switch {
	case !addr.IsValid():
		return errors.New("no address")
	case addr.IsLoopback(), addr.IsUnspecified(), addr.IsMulticast(), addr.IsLinkLocalUnicast(),
		addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return fmt.Errorf("%s is not a pod address", addr)
	}
	return nil
}

// portForward connects a websocket to a port of a running instance of this node, at the
// address virt-api names (its launcher pod's IP, from the pod object): a TCP connection, or a
// UDP flow whose datagrams travel a websocket message each. The port is dialled before the
// websocket opens, so a port nothing listens on is an HTTP error the client sees.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		statusError(w, fmt.Sprintf("port %q: must be between 1 and 65535", r.PathValue("port")), http.StatusBadRequest)
		return
	}
	protocol := r.PathValue("protocol")
	if protocol != "tcp" && protocol != "udp" {
		statusError(w, fmt.Sprintf("protocol %q: must be tcp or udp", protocol), http.StatusBadRequest)
		return
	}
	addr, err := netip.ParseAddr(r.URL.Query().Get("address"))
	if err == nil {
		allowed := s.ForwardAddress
		if allowed == nil {
			allowed = forwardAddress
		}
		err = allowed(addr)
	}
	if err != nil {
		statusError(w, fmt.Sprintf("address %q: %v", r.URL.Query().Get("address"), err), http.StatusBadRequest)
		return
	}
	vmi, err := s.Lister.VirtualMachineInstances(r.PathValue("namespace")).Get(r.PathValue("name"))
	switch {
	case apierrors.IsNotFound(err):
		statusError(w, "no such instance on this node", http.StatusNotFound)
		return
	case err != nil:
		statusError(w, err.Error(), http.StatusInternalServerError)
		return
	case vmi.Status.Phase != v1.Running:
		statusError(w, fmt.Sprintf("instance is %s, not Running", vmi.Status.Phase), http.StatusConflict)
		return
	}
	if _, err := s.Sockets.PodUID(vmi); err != nil {
		statusError(w, err.Error(), http.StatusNotFound)
		return
	}

	target := net.JoinHostPort(addr.String(), strconv.Itoa(port))
	conn, err := (&net.Dialer{Timeout: guestDialTimeout}).DialContext(r.Context(), protocol, target)
	if err != nil {
		statusError(w, fmt.Sprintf("port %d/%s of the guest: %v", port, protocol, err), http.StatusBadGateway)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		conn.Close()
		return // Upgrade has answered
	}
	klog.V(2).InfoS("port-forward opened", "vmi", vmi.Namespace+"/"+vmi.Name, "port", port, "protocol", protocol)
	if protocol == "udp" {
		BridgeDatagrams(ws, conn)
		return
	}
	Bridge(ws, conn)
}

// statusError answers a port-forward's refusal as a Status, which clients (client-go's
// websocket dialer, KubeVirt's virtctl) show with its message; plain text they would not.
func statusError(w http.ResponseWriter, msg string, code int) {
	reason := metav1.StatusReasonBadRequest
	switch code {
	case http.StatusNotFound:
		reason = metav1.StatusReasonNotFound
	case http.StatusConflict:
		reason = metav1.StatusReasonConflict
	case http.StatusBadGateway:
		reason = metav1.StatusReasonServiceUnavailable
	case http.StatusInternalServerError:
		reason = metav1.StatusReasonInternalError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code)})
}

// BridgeDatagrams copies datagrams between a websocket and a connected UDP socket, a message
// a datagram both ways, until the websocket ends or is silent for pongWait (UDP has no end of
// its own), then closes both.
func BridgeDatagrams(ws *websocket.Conn, conn net.Conn) {
	ws.SetReadLimit(maxDatagram)
	_ = ws.SetReadDeadline(time.Now().Add(pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pongWait)) })
	done := make(chan struct{})
	readerDone := make(chan struct{})
	writes := make(chan []byte)

	// UDP → websocket: the one writer of data frames, and the pings.
	go func() {
		defer close(readerDone)
		buf := make([]byte, maxDatagram)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				// A refused datagram (ICMP port unreachable) ends nothing: UDP goes on.
				if isRefused(err) {
					continue
				}
				return
			}
			select {
			case writes <- append([]byte(nil), buf[:n]...):
			case <-done:
				return
			}
		}
	}()
	go func() {
		ping := time.NewTicker(pingPeriod)
		defer ping.Stop()
		for {
			select {
			case b := <-writes:
				_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
				if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
					ws.Close()
					return
				}
			case <-ping.C:
				if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
					ws.Close()
					return
				}
			case <-done:
				return
			}
		}
	}()

	// websocket → UDP, a message a datagram.
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			break
		}
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		if _, err := conn.Write(data); err != nil && !isRefused(err) {
			break
		}
	}
	close(done)
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	conn.Close()
	ws.Close()
	<-readerDone
}

// isRefused says a UDP socket saw an ICMP port unreachable for an earlier datagram.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
