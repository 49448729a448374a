package launcher

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

// TestStatsUseTheInstancesNames: libvirt's taps and target devices leave the launcher under
// the spec's interface and disk names; devices the spec does not name are left out.
func TestStatsUseTheInstancesNames(t *testing.T) {
	vmi := testVMI()
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}, {Name: "data"}}
	dom := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{
		{Target: &libvirtxml.DomainDiskTarget{Dev: "vda"}}, {Target: &libvirtxml.DomainDiskTarget{Dev: "sda"}},
	}}}
	names := namesOf(vmi, dom, map[string]string{"default": "tap0"})
	ds := virt.DomainStats{
		CPUTime: ptr.To[uint64](5e9),
		VCPUs:   []virt.VCPUStats{{ID: 0, State: "running", Time: 4e9}},
		RSSKiB:  ptr.To[uint64](1000), CurrentKiB: ptr.To[uint64](65536),
		Net: []virt.NetStats{{Name: "tap0", RxBytes: 10, RxPackets: 1, TxBytes: 20, TxPackets: 2}, {Name: "vnet9", RxBytes: 99}},
		Block: []virt.BlockStats{{Name: "vda", ReadBytes: 4096, ReadRequests: 1}, {Name: "sda", WriteBytes: 512, WriteRequests: 1},
			{Name: "hdc", ReadBytes: 1}},
	}
	got := statsOf("uid-1", ds, names)
	assert.Equal(t, api.Stats{
		UID: "uid-1", CPUTimeNanoseconds: ptr.To[uint64](5e9),
		VCPUs:      []api.VCPUStats{{ID: 0, State: "running", TimeNanoseconds: 4e9}},
		Memory:     api.MemoryStats{ResidentBytes: ptr.To[uint64](1024000), DomainBytes: ptr.To[uint64](64 << 20)},
		Interfaces: []api.InterfaceStats{{Name: "default", RxBytes: 10, RxPackets: 1, TxBytes: 20, TxPackets: 2}},
		Disks:      []api.DiskStats{{Name: "root", ReadBytes: 4096, ReadRequests: 1}, {Name: "data", WriteBytes: 512, WriteRequests: 1}},
	}, got)
}

// TestStatsOverTheProtocol: 409 before the guest runs, the figures once it does.
func TestStatsOverTheProtocol(t *testing.T) {
	hv := newFake()
	hv.stats = virt.DomainStats{CPUTime: ptr.To[uint64](7)}
	l := newTestLauncher(t, hv)
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + api.PathStats)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "no guest yet")

	_, err = l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	resp, err = http.Get(srv.URL + api.PathStats)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var s api.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	assert.Equal(t, "uid-1", s.UID)
	assert.Equal(t, uint64(7), *s.CPUTimeNanoseconds)
}

// TestSlowLibvirtGetsOneQuestionAtATime: while libvirt is slow to answer, requests that give
// up leave one call under way, and the next request shares it instead of adding another.
func TestSlowLibvirtGetsOneQuestionAtATime(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	_, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	hv.statsBlock = make(chan struct{})
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := l.Stats(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	hv.mu.Lock()
	assert.Equal(t, 1, hv.statsCalls)
	hv.stats = virt.DomainStats{CPUTime: ptr.To[uint64](9)}
	hv.mu.Unlock()
	close(hv.statsBlock)
	require.Eventually(t, func() bool {
		s, err := l.Stats(context.Background())
		return err == nil && s.CPUTimeNanoseconds != nil && *s.CPUTimeNanoseconds == 9
	}, time.Second, 10*time.Millisecond)
}
