package virtctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"

	gwebsocket "github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	clientwebsocket "k8s.io/client-go/transport/websocket"
)

// streamSubprotocol is KubeVirt's websocket subprotocol for raw console and VNC bytes.
const streamSubprotocol = "plain.kubevirt.io"

// openStream opens an instance's console or VNC stream through the API, with the same
// credentials as every other request.
func openStream(ctx context.Context, cfg *rest.Config, namespace, name, stream string) (*gwebsocket.Conn, error) {
	rt, holder, err := clientwebsocket.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	u.Path = path.Join(u.Path, "/apis", subresourcesGV.String(), "namespaces", namespace, "virtualmachineinstances", name, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	conn, err := clientwebsocket.Negotiate(rt, holder, req, streamSubprotocol)
	if err != nil {
		// A refused upgrade carries the server's Status as its cause, which the error itself
		// does not unwrap to: keep that, so that callers can tell not found from forbidden.
		var upgrade *httpstream.UpgradeFailureError
		if errors.As(err, &upgrade) {
			var status *apierrors.StatusError
			if errors.As(upgrade.Cause, &status) {
				return nil, fmt.Errorf("open the %s of %s/%s: %w", stream, namespace, name, status)
			}
		}
		return nil, fmt.Errorf("open the %s of %s/%s: %w", stream, namespace, name, err)
	}
	return conn, nil
}
