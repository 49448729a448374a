package handler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// amplifiedList is a JSON list of empty objects that fills a launcher answer (api.MaxAnswer):
// some 350,000 elements, each decoded into a struct.
var amplifiedList = "[" + strings.Repeat("{},", api.MaxAnswer/3-10) + "{}]"

// serveAmplifyingLauncher answers every call as a tenant's launcher could, within the answer's
// byte limit yet amplified: the events long poll with that many events, the guest agent's
// report with that many users, the state with that many interfaces.
func serveAmplifyingLauncher(t *testing.T, sockDir string) {
	answers := map[string]string{
		api.PathEvents:    `{"events":` + amplifiedList + `,"state":{}}`,
		api.PathGuestInfo: `{"userList":` + amplifiedList + `}`,
		api.PathState:     `{"interfaces":` + amplifiedList + `}`,
	}
	ln := listenUnix(t, filepath.Join(sockDir, api.SocketName))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer, ok := answers[r.URL.Path]
		if !ok {
			answer = amplifiedList
		}
		_, _ = io.WriteString(w, answer)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// serveHonestLauncher answers as the launcher does: its state, a long poll that waits, the
// guest agent's report; and a console that echoes upper-cased.
func serveHonestLauncher(t *testing.T, sockDir string, uid types.UID) {
	state := fmt.Sprintf(`{"uid":%q,"phase":"Running","seq":1}`, uid)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathState, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, state) })
	mux.HandleFunc("GET "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, `{"events":[],"state":`+state+`}`)
	})
	mux.HandleFunc("GET "+api.PathGuestInfo, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"hostname":"honest","userList":[{"userName":"root"}]}`)
	})
	ln := listenUnix(t, filepath.Join(sockDir, api.SocketName))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	console := listenUnix(t, filepath.Join(sockDir, api.ConsoleSocketName))
	t.Cleanup(func() { console.Close() })
	go func() {
		for {
			c, err := console.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(strings.ToUpper(string(buf[:n]))))
				}
			}()
		}
	}()
}

// heapPeak samples the live heap until stopped and returns its highest value.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	peak := make(chan uint64, 1)
	go func() {
		var top uint64
		var m runtime.MemStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			top = max(top, m.HeapAlloc)
			select {
			case <-stop:
				peak <- top
				return
			case <-tick.C:
			}
		}
	}()
	return peak
}

// TestHostileLaunchersCannotExhaustTheHandler: four instances' launchers answer every call
// with a MiB of [{},{},...] (tens of MB once decoded, unbounded), to the handler's own long
// polls and to a burst of guest agent requests from virt-api. The handler decodes none of it:
// its heap stays within a few MiB of where it was (a limit of 256 MiB holds many such nodes'
// worth), and the honest instance on the same node keeps its console, its long poll and its
// guest agent answers throughout.
func TestHostileLaunchersCannotExhaustTheHandler(t *testing.T) {
	pods := newTestPods(t)
	calls := api.NewCallLimits(api.DefaultCallsPerInstance, api.DefaultAnswersPerNode)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	instance := func(name string) (*v1.VirtualMachineInstance, string) {
		vmi := &v1.VirtualMachineInstance{}
		vmi.Namespace, vmi.Name, vmi.UID = "ns", name, types.UID("uid-"+name)
		vmi.Status.Phase = v1.Running
		vmi.Status.ActivePods = map[types.UID]string{testPodUID(name): "node-a"}
		require.NoError(t, indexer.Add(vmi))
		dir := pods.socketDir(vmi)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return vmi, dir
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The handler's long poll of each launcher, as the controller runs it.
	watch := func(vmi *v1.VirtualMachineInstance) *launcher {
		dir, err := pods.root.Dir(testPodUID(vmi.Name), layout.SocketVolume)
		require.NoError(t, err)
		l := newLauncher("ns/"+vmi.Name, vmi.UID, dir, calls)
		l.watch(ctx, func() {})
		t.Cleanup(l.stop)
		return l
	}
	var hostile []string
	for i := range 4 {
		vmi, dir := instance(fmt.Sprintf("h%d", i))
		serveAmplifyingLauncher(t, dir)
		watch(vmi)
		hostile = append(hostile, vmi.Name)
	}
	honestVMI, honestDir := instance("ok")
	serveHonestLauncher(t, honestDir, honestVMI.UID)
	honestLauncher := watch(honestVMI)

	ca := newTestCA(t)
	s := &Server{Lister: listers.NewVirtualMachineInstanceLister(indexer), Sockets: &Sockets{Pods: pods.root, NodeName: "node-a"},
		AllowedNames: []string{"virt-api"}, Calls: calls}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "virt-handler", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}
	srv.StartTLS()
	defer srv.Close()
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cert}},
		MaxConnsPerHost: 64}}
	guestInfo := func(name string) (int, string) {
		resp, err := client.Get(srv.URL + "/v1/namespaces/ns/virtualmachineinstances/" + name + "/guestosinfo")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	console, _, err := dialer(ca, &cert).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/ok/console"), nil)
	require.NoError(t, err)
	defer console.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stopSampling := make(chan struct{})
	peak := heapPeak(stopSampling)

	// virt-api's burst: 32 callers asking the hostile instances for their guest agent's report.
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var refused, asked atomic.Int64
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				code, body := guestInfo(hostile[i%len(hostile)])
				asked.Add(1)
				if code != http.StatusOK && strings.Contains(body, "refused before decoding") {
					refused.Add(1)
				}
			}
		}()
	}
	// Meanwhile the honest instance's console answers every keystroke, and its guest agent.
	var slowest time.Duration
	for n := 0; time.Now().Before(deadline); n++ {
		start := time.Now()
		msg := fmt.Sprintf("ping-%d", n)
		require.NoError(t, console.WriteMessage(websocket.BinaryMessage, []byte(msg)))
		require.NoError(t, console.SetReadDeadline(time.Now().Add(2*time.Second)))
		_, got, err := console.ReadMessage()
		require.NoError(t, err, "the honest console during the attack")
		assert.Equal(t, strings.ToUpper(msg), string(got))
		slowest = max(slowest, time.Since(start))
		if n%10 == 0 {
			code, body := guestInfo("ok")
			assert.Equal(t, http.StatusOK, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	close(stopSampling)
	grew := int64(<-peak) - int64(before.HeapAlloc)
	t.Logf("%d guest agent calls to hostile launchers, %d refused before decoding; heap grew at most %d MiB; slowest console echo %s",
		asked.Load(), refused.Load(), grew>>20, slowest)

	assert.Positive(t, refused.Load())
	assert.Equal(t, asked.Load(), refused.Load(), "every amplified answer is refused before it is decoded")
	assert.Less(t, grew, int64(64<<20), "the handler's heap stays bounded")
	assert.Equal(t, api.PhaseRunning, honestLauncher.State().Phase, "the honest instance's long poll goes on")
}
