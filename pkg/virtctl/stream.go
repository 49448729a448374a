package virtctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/client-go/rest"
	clientwebsocket "k8s.io/client-go/transport/websocket"
)

// streamSubprotocol is KubeVirt's websocket subprotocol for raw console and VNC bytes.
const streamSubprotocol = "plain.kubevirt.io"

// openStream opens an instance's console or VNC stream through the API, with the same
// credentials as every other request.
func openStream(ctx context.Context, cfg *rest.Config, namespace, name, stream string) (*gwebsocket.Conn, error) {
	return openResourceStream(ctx, cfg, namespace, "virtualmachineinstances", name, stream)
}

// openResourceStream opens the stream at subpath of resource/name (virtualmachines or
// virtualmachineinstances) in subresources.kubevirt.io.
func openResourceStream(ctx context.Context, cfg *rest.Config, namespace, resource, name, stream string) (*gwebsocket.Conn, error) {
	rt, holder, err := clientwebsocket.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	u.Path = path.Join(u.Path, "/apis", subresourcesGV.String(), "namespaces", namespace, resource, name, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	conn, err := clientwebsocket.Negotiate(rt, holder, req, streamSubprotocol)
	if err != nil {
		return nil, fmt.Errorf("open the %s of %s/%s: %w", stream, namespace, name, err)
	}
	return conn, nil
}
