// Package deviceplugin offers host character devices to pods through kubelet's device-plugin
// API: devices.kubevirt.io/kvm (/dev/kvm) and devices.kubevirt.io/tun (/dev/net/tun). The
// devices cgroup admits a device into an unprivileged container only this way. Each resource
// is a pool of interchangeable slots, so many launcher pods can share the one device.
package deviceplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// DefaultSlots is how many pods may hold a device at once (KubeVirt offers 1000).
const DefaultSlots = 1000

// Plugin offers one host device as Resource.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Resource is the extended resource name, such as devices.kubevirt.io/kvm.
	Resource string
	// DevicePath is the host device, which appears at the same path in the container.
	DevicePath string
	// Slots is the number of allocatable units; DefaultSlots when zero.
	Slots int
	// PluginDir is where plugin sockets live and kubelet's registration socket is
	// (pluginapi.DevicePluginPath, fixed in kubelet).
	PluginDir string
}

// KVM and TUN are the two plugins virt-handler runs.
func KVM(dir string) *Plugin {
	return &Plugin{Resource: layout.KVMResource, DevicePath: "/dev/kvm", PluginDir: dir}
}

func TUN(dir string) *Plugin {
	return &Plugin{Resource: layout.TunResource, DevicePath: "/dev/net/tun", PluginDir: dir}
}

func (p *Plugin) socketPath() string {
	return filepath.Join(p.PluginDir, "hangar-"+filepath.Base(p.Resource)+".sock")
}

func (p *Plugin) slots() int {
	if p.Slots > 0 {
		return p.Slots
	}
	return DefaultSlots
}

// health is the devices' health: all slots share the host device's.
func (p *Plugin) health() string {
	if _, err := os.Stat(p.DevicePath); err != nil {
		return pluginapi.Unhealthy
	}
	return pluginapi.Healthy
}

func (p *Plugin) devices() []*pluginapi.Device {
	h := p.health()
	out := make([]*pluginapi.Device, p.slots())
	for i := range out {
		out[i] = &pluginapi.Device{ID: filepath.Base(p.Resource) + strconv.Itoa(i), Health: h}
	}
	return out
}

func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list, and again when the host device's health changes.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	last := p.health()
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices()}); err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-tick.C:
			if h := p.health(); h != last {
				last = h
				if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices()}); err != nil {
					return err
				}
			}
		}
	}
}

// Allocate gives each container the device node, read-write (no mknod).
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Devices: []*pluginapi.DeviceSpec{{HostPath: p.DevicePath, ContainerPath: p.DevicePath, Permissions: "rw"}},
		})
	}
	return resp, nil
}

func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// Run serves the plugin and registers it with kubelet until ctx ends. kubelet deletes every
// plugin socket when it restarts; Run then serves and registers again.
func (p *Plugin) Run(ctx context.Context) error {
	for {
		srv, err := p.serve()
		if err != nil {
			return err
		}
		if err := p.register(ctx); err != nil {
			klog.ErrorS(err, "device plugin registration; retrying", "resource", p.Resource)
		} else {
			klog.InfoS("device plugin registered", "resource", p.Resource, "device", p.DevicePath)
		}
		// Wait until kubelet removes our socket (its restart) or ctx ends.
		for gone := false; !gone; {
			select {
			case <-ctx.Done():
				srv.Stop()
				_ = os.Remove(p.socketPath())
				return nil
			case <-time.After(time.Second):
				_, err := os.Stat(p.socketPath())
				gone = os.IsNotExist(err)
			}
		}
		srv.Stop()
	}
}

func (p *Plugin) serve() (*grpc.Server, error) {
	if err := os.MkdirAll(p.PluginDir, 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(p.socketPath())
	ln, err := net.Listen("unix", p.socketPath())
	if err != nil {
		return nil, fmt.Errorf("device plugin %s: %w", p.Resource, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

func (p *Plugin) register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.PluginDir, filepath.Base(pluginapi.KubeletSocket)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(p.socketPath()),
		ResourceName: p.Resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}
