package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// fakeAgentLauncher serves the guest agent calls of vmi's launcher: a Debian guest with one
// user and one file system; freeze records the timeout it was given.
func (a *nodeAgent) fakeAgentLauncher(t *testing.T, vmi *v1.VirtualMachineInstance) *[]int64 {
	t.Helper()
	var mu sync.Mutex
	freezes := &[]int64{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+launcherapi.PathGuestInfo, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(v1.VirtualMachineInstanceGuestAgentInfo{
			GuestAgentVersion: "7.2.22", Hostname: "guest", Timezone: "UTC, 0",
			OS:       v1.VirtualMachineInstanceGuestOSInfo{ID: "debian", Name: "Debian GNU/Linux", PrettyName: "Debian GNU/Linux 12 (bookworm)", VersionID: "12"},
			UserList: []v1.VirtualMachineInstanceGuestOSUser{{UserName: "root", LoginTime: 1.7e9}},
			FSInfo: v1.VirtualMachineInstanceFileSystemInfo{Disks: []v1.VirtualMachineInstanceFileSystem{{
				DiskName: "vda2", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 100, TotalBytes: 1000,
				Disk: []v1.VirtualMachineInstanceFileSystemDisk{{BusType: "virtio"}}}}},
		})
	})
	mux.HandleFunc("POST "+launcherapi.PathFreeze, func(w http.ResponseWriter, r *http.Request) {
		var req launcherapi.FreezeRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		*freezes = append(*freezes, req.UnfreezeTimeoutSeconds)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(launcherapi.State{UID: string(vmi.UID), Phase: launcherapi.PhaseRunning, FSFrozen: true})
	})
	mux.HandleFunc("POST "+launcherapi.PathUnfreeze, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(launcherapi.State{UID: string(vmi.UID), Phase: launcherapi.PhaseRunning})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l := listenUnix(t, filepath.Join(a.launcherPod(t, vmi), launcherapi.SocketName))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return freezes
}

func TestGuestAgentThroughVirtAPI(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, server.Client)

	ns := "agent"
	vmis := server.Client.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	freezes := agent.fakeAgentLauncher(t, vmi)
	rest := server.Client.Discovery().RESTClient()
	base := "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/"
	get := func(call string) (int, []byte) {
		var code int
		body, _ := rest.Get().AbsPath(base + call).Do(ctx).StatusCode(&code).Raw()
		return code, body
	}
	put := func(call, body string) int {
		var code int
		rest.Put().AbsPath(base + call).Body([]byte(body)).Do(ctx).StatusCode(&code)
		return code
	}

	code, _ := get("guestosinfo")
	assert.Equal(t, http.StatusConflict, code, "not running")
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	code, body := get("guestosinfo")
	assert.Equal(t, http.StatusConflict, code, "no agent connected: %s", body)
	assert.Contains(t, string(body), "guest agent")
	assert.Equal(t, http.StatusConflict, put("freeze", `{"unfreezeTimeout":"5m"}`))

	vmi.Status.Conditions = append(vmi.Status.Conditions, v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue})
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	var info v1.VirtualMachineInstanceGuestAgentInfo
	require.Eventually(t, func() bool { // the agent's cache sees the instance run
		code, body = get("guestosinfo")
		return code == http.StatusOK && json.Unmarshal(body, &info) == nil
	}, 10*time.Second, 100*time.Millisecond, "%d %s", code, body)
	assert.Equal(t, "debian", info.OS.ID)
	assert.Equal(t, "7.2.22", info.GuestAgentVersion)

	code, body = get("userlist")
	require.Equal(t, http.StatusOK, code, string(body))
	var users v1.VirtualMachineInstanceGuestOSUserList
	require.NoError(t, json.Unmarshal(body, &users))
	assert.Equal(t, []v1.VirtualMachineInstanceGuestOSUser{{UserName: "root", LoginTime: 1.7e9}}, users.Items)

	code, body = get("filesystemlist")
	require.Equal(t, http.StatusOK, code, string(body))
	var fs v1.VirtualMachineInstanceFileSystemList
	require.NoError(t, json.Unmarshal(body, &fs))
	require.Len(t, fs.Items, 1)
	assert.Equal(t, "/", fs.Items[0].MountPoint)

	// virtctl prints what the agent reports, as KubeVirt's virtctl does.
	exit, out := runVirtctl(server.Kubeconfig, nil, "-n", ns, "guestosinfo", "guest")
	require.Equal(t, 0, exit, out)
	assert.Contains(t, out, `"prettyName": "Debian GNU/Linux 12 (bookworm)"`)
	exit, out = runVirtctl(server.Kubeconfig, nil, "-n", ns, "userlist", "guest")
	require.Equal(t, 0, exit, out)
	assert.Contains(t, out, `"userName": "root"`)
	exit, out = runVirtctl(server.Kubeconfig, nil, "-n", ns, "fslist", "guest")
	require.Equal(t, 0, exit, out)
	assert.Contains(t, out, `"mountPoint": "/"`)
	exit, out = runVirtctl(server.Kubeconfig, nil, "-n", ns, "guestosinfo", "nobody")
	assert.Equal(t, 1, exit)
	assert.Contains(t, out, "not found")

	assert.Equal(t, http.StatusAccepted, put("freeze", `{"unfreezeTimeout":"5m"}`))
	assert.Equal(t, http.StatusAccepted, put("freeze", `{"unfreezeTimeout":"0s"}`))
	assert.Equal(t, http.StatusAccepted, put("unfreeze", ""))
	for _, bad := range []string{``, `{}`, `{"unfreezeTimeout":"-5s"}`, `{"unfreezeTimeout":"100000000h"}`, `{"unfreezeTimeout":5}`} {
		assert.Equal(t, http.StatusBadRequest, put("freeze", bad), bad)
	}
	assert.Equal(t, []int64{300, 0}, *freezes)

	// Discovery names them, so kubectl and KubeVirt's clients find them.
	resources, err := server.Client.Discovery().ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
	require.NoError(t, err)
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
	}
	assert.Subset(t, names, []string{"virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist",
		"virtualmachineinstances/filesystemlist", "virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze"})
}
