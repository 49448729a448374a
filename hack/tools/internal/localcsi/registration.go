package localcsi

import (
	"context"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrationServer answers the kubelet's plugin watcher, which finds its socket in the
// kubelet's plugins_registry directory: the driver's name and where its CSI socket is (a path
// in the kubelet's mount namespace, which is the driver's too). node-driver-registrar does
// this for other drivers; the Go module proxy does not serve it here.
type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
	// registered receives the kubelet's verdict.
	registered func(ok bool, err string)
}

func (r *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              DriverName,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrationServer) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		klog.InfoS("registered with the kubelet", "driver", DriverName, "endpoint", r.endpoint)
	} else {
		klog.ErrorS(nil, "the kubelet refused the registration", "error", st.Error)
	}
	if r.registered != nil {
		r.registered(st.PluginRegistered, st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// NewRegistrationServer serves the kubelet's plugin registration for the CSI socket endpoint.
func NewRegistrationServer(endpoint string, registered func(ok bool, err string)) *grpc.Server {
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, &registrationServer{endpoint: endpoint, registered: registered})
	return s
}
