package handler

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// serveHostileAgent serves the launcher protocol's guest agent calls in sockDir as a
// tenant's launcher could: more users and file systems than the protocol allows (yet within
// what the handler decodes at all: api.MaxAnswerElements per list), names with terminal
// escapes and beyond every length, negative sizes; freeze records its timeout.
func serveHostileAgent(t *testing.T, sockDir string) {
	long := strings.Repeat("x", 5000)
	info := v1.VirtualMachineInstanceGuestAgentInfo{
		GuestAgentVersion: "7.2\x1b[31m", Hostname: long, Timezone: "UTC, 0", FSFreezeStatus: "melted",
		OS: v1.VirtualMachineInstanceGuestOSInfo{Name: "Debian GNU/Linux", PrettyName: "Debian\x00 12" + long, ID: "debian"},
	}
	for i := range 400 {
		info.UserList = append(info.UserList, v1.VirtualMachineInstanceGuestOSUser{UserName: fmt.Sprintf("user%d\n", i), LoginTime: -5})
	}
	// Within the 1 MiB a launcher answer may have (a larger one is refused whole).
	for i := range 300 {
		fs := v1.VirtualMachineInstanceFileSystem{DiskName: "vda1", MountPoint: "/" + long[:1100], FileSystemType: "ext4", UsedBytes: -1, TotalBytes: 10}
		for range 20 {
			fs.Disk = append(fs.Disk, v1.VirtualMachineInstanceFileSystemDisk{BusType: "virtio", Serial: fmt.Sprint(i)})
		}
		info.FSInfo.Disks = append(info.FSInfo.Disks, fs)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathGuestInfo, func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(info) })
	mux.HandleFunc("POST "+api.PathFreeze, func(w http.ResponseWriter, r *http.Request) {
		var req api.FreezeRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.UnfreezeTimeoutSeconds != 300 {
			http.Error(w, fmt.Sprintf(`{"error":"timeout %d"}`, req.UnfreezeTimeoutSeconds), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(api.State{Phase: api.PhaseRunning, FSFrozen: true})
	})
	mux.HandleFunc("POST "+api.PathUnfreeze, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(api.Error{Error: "conflict: the guest agent is not connected"})
	})
	ln := listenUnix(t, filepath.Join(sockDir, api.SocketName))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func TestGuestAgentSubresourcesAreBounded(t *testing.T) {
	srv, ca := serverFixture(t)
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cert}}}}
	do := func(method, call, body string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, srv.URL+"/v1/namespaces/ns/virtualmachineinstances/guest/"+call, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}

	resp, data := do(http.MethodGet, "guestosinfo", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	var info v1.VirtualMachineInstanceGuestAgentInfo
	require.NoError(t, json.Unmarshal(data, &info))
	assert.Equal(t, "7.2[31m", info.GuestAgentVersion, "control characters are dropped")
	assert.Len(t, info.Hostname, maxAgentString)
	assert.Equal(t, "Debian GNU/Linux", info.OS.Name)
	assert.LessOrEqual(t, len(info.OS.PrettyName), maxAgentString)
	assert.Len(t, info.UserList, maxAgentUsers)
	assert.Equal(t, "user0", info.UserList[0].UserName)
	assert.Zero(t, info.UserList[0].LoginTime, "negative times become 0")
	assert.Len(t, info.FSInfo.Disks, maxAgentFileSystems)
	assert.Len(t, info.FSInfo.Disks[0].Disk, maxAgentDisksPerFS)
	assert.Len(t, info.FSInfo.Disks[0].MountPoint, maxAgentPath)
	assert.Zero(t, info.FSInfo.Disks[0].UsedBytes)
	assert.Empty(t, info.FSFreezeStatus, "only \"frozen\" is a freeze status")

	resp, data = do(http.MethodGet, "userlist", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var users v1.VirtualMachineInstanceGuestOSUserList
	require.NoError(t, json.Unmarshal(data, &users))
	assert.Len(t, users.Items, maxAgentUsers)

	resp, data = do(http.MethodGet, "filesystemlist", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var fsList v1.VirtualMachineInstanceFileSystemList
	require.NoError(t, json.Unmarshal(data, &fsList))
	assert.Len(t, fsList.Items, maxAgentFileSystems)

	resp, data = do(http.MethodPut, "freeze", `{"unfreezeTimeout":"5m"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	for _, body := range []string{``, `{}`, `{"unfreezeTimeout":"-1s"}`, `{"unfreezeTimeout":"` + strings.Repeat("1", 2000) + `s"}`} {
		resp, _ = do(http.MethodPut, "freeze", body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	}
	resp, data = do(http.MethodPut, "unfreeze", "")
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "the launcher's conflict (no agent) is a conflict: %s", data)
	resp, _ = do(http.MethodGet, "../stopped/guestosinfo", "")
	assert.NotEqual(t, http.StatusOK, resp.StatusCode)
}

func TestReportedAgent(t *testing.T) {
	assert.Nil(t, reportedAgent(nil))
	in := &api.Agent{Hostname: "guest\x1b]0;owned\x07", OS: v1.VirtualMachineInstanceGuestOSInfo{ID: "debian"}}
	in.Interfaces = append(in.Interfaces,
		api.AgentInterface{Name: "enp1s0", MAC: "52:54:00:AA:BB:CC", IPs: []string{"10.0.2.2", "fe80::1%enp1s0", "not-an-ip", "fd00::2"}},
		api.AgentInterface{Name: "../../x", MAC: "52:54:00:00:00:01", IPs: []string{"192.0.2.1"}},
		api.AgentInterface{Name: "bad-mac", MAC: "zz"},
	)
	for i := range 100 {
		in.Interfaces = append(in.Interfaces, api.AgentInterface{Name: fmt.Sprint("d", i), MAC: "02:00:00:00:00:02", IPs: make([]string, 100)})
	}
	out := reportedAgent(in)
	assert.Equal(t, "guest]0;owned", out.Hostname)
	require.Len(t, out.Interfaces, maxAgentInterfaces)
	assert.Equal(t, api.AgentInterface{Name: "enp1s0", MAC: "52:54:00:aa:bb:cc", IPs: []string{"10.0.2.2", "fd00::2"}}, out.Interfaces[0])
	assert.Equal(t, api.AgentInterface{MAC: "52:54:00:00:00:01", IPs: []string{"192.0.2.1"}}, out.Interfaces[1], "a name that is no interface name is dropped")
	assert.Equal(t, "d0", out.Interfaces[2].Name, "an interface with a bad MAC is dropped")
	assert.Empty(t, out.Interfaces[2].IPs)
}

func TestAgentStatus(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	vmi.UID = "u"
	vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
	vmi.Status.Phase = v1.Running
	now := metav1.Now()
	st := api.State{UID: "u", Phase: api.PhaseRunning,
		Interfaces: []api.Interface{{Name: "default", MAC: "52:54:00:01:02:03", IP: "10.217.0.5", PodInterfaceName: "eth0"}}}

	s := nextStatus(vmi, st, now)
	assert.Nil(t, s.Condition(v1.VirtualMachineInstanceAgentConnected), "no agent, no condition")

	st.Agent = &api.Agent{OS: v1.VirtualMachineInstanceGuestOSInfo{ID: "debian", PrettyName: "Debian GNU/Linux 12 (bookworm)"}, Interfaces: []api.AgentInterface{
		{Name: "enp1s0", MAC: "52:54:00:01:02:03", IPs: []string{"10.0.2.2", "fe80::5054:ff:fe01:203", "fd10::2"}},
		{Name: "hangar0", MAC: "02:00:00:00:00:07", IPs: []string{"192.0.2.7"}},
	}}
	st.FSFrozen = true
	vmi.Status = nextStatus(vmi, st, now)
	c := vmi.Status.Condition(v1.VirtualMachineInstanceAgentConnected)
	require.NotNil(t, c)
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Equal(t, "debian", vmi.Status.GuestOSInfo.ID)
	assert.Equal(t, v1.FSFrozen, vmi.Status.FSFreezeStatus)
	require.Len(t, vmi.Status.Interfaces, 2)
	primary := vmi.Status.Interfaces[0]
	// Masquerade: the pod's address stays (the guest's 10.0.2.2 is private), the guest's
	// global IPv6 address is added, its link-local one is not.
	assert.Equal(t, v1.VirtualMachineInstanceNetworkInterface{Name: "default", MAC: "52:54:00:01:02:03", IP: "10.217.0.5",
		IPs: []string{"10.217.0.5", "fd10::2"}, InterfaceName: "enp1s0", PodInterfaceName: "eth0", InfoSource: "domain, guest-agent"}, primary)
	assert.Equal(t, v1.VirtualMachineInstanceNetworkInterface{MAC: "02:00:00:00:00:07", IP: "192.0.2.7", IPs: []string{"192.0.2.7"},
		InterfaceName: "hangar0", InfoSource: "guest-agent"}, vmi.Status.Interfaces[1])

	// The agent goes away: the condition goes, the OS stays as last seen (as KubeVirt).
	st.Agent, st.FSFrozen = nil, false
	vmi.Status = nextStatus(vmi, st, now)
	assert.Nil(t, vmi.Status.Condition(v1.VirtualMachineInstanceAgentConnected))
	assert.Equal(t, "debian", vmi.Status.GuestOSInfo.ID)
	assert.Empty(t, vmi.Status.FSFreezeStatus)
	assert.Len(t, vmi.Status.Interfaces, 1)

	// Guest-only interfaces are capped.
	st.Agent = &api.Agent{}
	for i := range 20 {
		st.Agent.Interfaces = append(st.Agent.Interfaces, api.AgentInterface{Name: fmt.Sprint("d", i), MAC: fmt.Sprintf("02:00:00:00:01:%02x", i)})
	}
	vmi.Status = nextStatus(vmi, st, now)
	assert.Len(t, vmi.Status.Interfaces, 1+maxGuestOnlyIfaces)
}
