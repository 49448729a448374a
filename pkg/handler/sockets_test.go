package handler

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// serveHealth runs a launcher in pod podUID's socket volume that says it is name.
func serveHealth(t *testing.T, pods *testPods, podUID types.UID, name string) {
	dir := filepath.Join(pods.dir, string(podUID), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ln := listenUnix(t, filepath.Join(dir, api.SocketName))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Health{UID: name})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// A migration's target node finds the target launcher by the pod UID virt-controller recorded
// in the instance's status when it created the pod (pkg/controller/migration), never by a
// label: a pod a tenant planted on the same node, labelled with the migration's UID, is not
// dialled, nor is it once it claims the target's name.
func TestTheTargetLauncherIsThePodVirtControllerRecorded(t *testing.T) {
	pods := newTestPods(t)
	recorded, planted := testPodUID("target"), testPodUID("planted")
	serveHealth(t, pods, recorded, "recorded")
	serveHealth(t, pods, planted, "planted")
	vmi := &v1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "ns", "vm"
	vmi.Status.NodeName = "node-a"
	vmi.Status.ActivePods = map[types.UID]string{testPodUID("source"): "node-a", recorded: "node-b"}
	vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUid: "m-1", TargetNode: "node-b", TargetPod: "target"}

	target := &Sockets{Pods: pods.root, NodeName: "node-b"}
	dir, err := target.Dir(vmi)
	require.NoError(t, err)
	defer dir.Close()
	client := api.NewDialClient(func(context.Context) (net.Conn, error) { return dir.Dial(api.SocketName) })
	defer client.Close()
	h, err := client.Healthz(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "recorded", h.UID)

	// Nothing recorded on a node: no launcher there, whatever pods it runs.
	_, err = (&Sockets{Pods: pods.root, NodeName: "node-c"}).Dir(vmi)
	assert.ErrorContains(t, err, "has no launcher pod on this node")
}
