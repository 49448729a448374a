// Package framework starts the real virt-api in-process for integration tests: the same
// options, registry and generic server as the binary, on a real embedded etcd.
package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	"github.com/hangarvm/hangar/pkg/etcd"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// VirtAPI is a running in-process virt-api.
type VirtAPI struct {
	// Config reaches the server as the standalone admin.
	Config *rest.Config
	// Client is the generated clientset on Config.
	Client versioned.Interface
	// Kubeconfig is a kubeconfig file for kubectl.
	Kubeconfig string
	// Dir holds etcd's data and the certificates; a restart reuses it.
	Dir string
	// Binary, when set, runs virt-api as a process of this binary (virtapiprocess.go).
	Binary string

	port   int
	cancel context.CancelFunc
	done   chan error
	cmd    *exec.Cmd
	etcd   *etcd.Server
	// configure, when set, replaces standalone mode with other options (see aggregated.go).
	configure func(o *virtapi.Options) error
	// customize, when set, adjusts the options after the mode's own settings.
	customize func(o *virtapi.Options)
}

// StartVirtAPI starts virt-api in standalone mode with a fresh embedded etcd, and stops it
// when the test ends.
func StartVirtAPI(t testing.TB) *VirtAPI {
	t.Helper()
	return StartVirtAPIWith(t, nil)
}

// StartVirtAPIWith is StartVirtAPI with options adjusted by customize (nil for none).
func StartVirtAPIWith(t testing.TB, customize func(o *virtapi.Options)) *VirtAPI {
	t.Helper()
	s := &VirtAPI{Dir: t.TempDir(), customize: customize}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Start starts virt-api like StartVirtAPI, for a TestMain; the caller stops it and removes Dir.
func Start() (*VirtAPI, error) {
	dir, err := os.MkdirTemp("", "virt-api-")
	if err != nil {
		return nil, err
	}
	s := &VirtAPI{Dir: dir}
	return s, s.start()
}

// Restart stops virt-api and starts it again on the same etcd data and port.
func (s *VirtAPI) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

func (s *VirtAPI) start() error {
	listenAddr := "127.0.0.1:0"
	if s.port != 0 {
		listenAddr = fmt.Sprintf("127.0.0.1:%d", s.port)
	}
	listener, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("listen for virt-api: %w", err)
	}
	s.port = listener.Addr().(*net.TCPAddr).Port

	o := virtapi.NewOptions()
	o.EmbeddedEtcdDir = filepath.Join(s.Dir, "etcd")
	serving := o.RecommendedOptions.SecureServing
	serving.Listener = listener
	serving.BindPort = s.port
	serving.ServerCert.CertDirectory = filepath.Join(s.Dir, "certs")
	if s.configure != nil {
		if err := s.configure(o); err != nil {
			listener.Close()
			return err
		}
	} else {
		o.Standalone = true
		o.InsecureDisableDelegatedAuth = true
		o.WriteKubeconfig = filepath.Join(s.Dir, "kubeconfig")
		s.Kubeconfig = o.WriteKubeconfig
	}
	if s.customize != nil {
		s.customize(o)
	}
	if s.Binary != "" {
		if err := s.startProcess(o, listener); err != nil {
			return err
		}
		if err := s.waitReady(); err != nil {
			s.Stop()
			return fmt.Errorf("virt-api did not become ready: %w", err)
		}
		return nil
	}
	if err := o.Complete(); err != nil {
		return fmt.Errorf("complete options: %w", err)
	}
	if err := o.Validate(); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- o.Run(ctx) }()

	if err := s.waitReady(); err != nil {
		s.Stop()
		return fmt.Errorf("virt-api did not become ready: %w", err)
	}
	return nil
}

// waitReady waits for the kubeconfig to appear and /readyz to answer ok.
func (s *VirtAPI) waitReady() error {
	return wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true,
		func(ctx context.Context) (bool, error) {
			select {
			case err := <-s.done:
				s.done <- err
				return false, fmt.Errorf("virt-api exited: %w", err)
			default:
			}
			if _, err := os.Stat(s.Kubeconfig); err != nil {
				return false, nil
			}
			if s.Config == nil {
				cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
				if err != nil {
					return false, nil // the file is there but not written whole yet
				}
				cfg.QPS, cfg.Burst = -1, -1 // tests measure the server, not client-side throttling
				if s.Client, err = versioned.NewForConfig(cfg); err != nil {
					return false, err
				}
				s.Config = cfg
			}
			body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil && string(body) == "ok", nil
		})
}

// Stop stops virt-api and its etcd, and waits for both to be gone.
func (s *VirtAPI) Stop() {
	if s.cmd != nil {
		s.stopProcess()
		s.Config, s.Client = nil, nil
		return
	}
	if s.cancel == nil {
		return
	}
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
	}
	s.cancel = nil
	s.Config, s.Client = nil, nil
}
