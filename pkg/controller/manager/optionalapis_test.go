package manager

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	snapshotfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	vmsnapshotfake "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned/fake"
)

// fakeDiscovery answers ServerResourcesForGroupVersion from a map the test changes while a
// watcher asks; fail makes every answer an error other than NotFound.
type fakeDiscovery struct {
	discovery.DiscoveryInterface
	mu        sync.Mutex
	resources map[string][]string
	fail      bool
	asked     int
}

func (d *fakeDiscovery) set(groupVersion string, resources ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if resources == nil {
		delete(d.resources, groupVersion)
		return
	}
	d.resources[groupVersion] = resources
}

func (d *fakeDiscovery) setFail(fail bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = fail
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	if d.fail {
		return nil, apierrors.NewServiceUnavailable("discovery is down")
	}
	names, ok := d.resources[groupVersion]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, groupVersion)
	}
	list := &metav1.APIResourceList{GroupVersion: groupVersion}
	for _, n := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: n})
	}
	return list, nil
}

func allOptional() Options {
	return Options{
		Dynamic:         dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		Snapshots:       vmsnapshotfake.NewSimpleClientset(),
		VolumeSnapshots: snapshotfake.NewSimpleClientset(),
	}
}

func TestProbeOptionalAPIs(t *testing.T) {
	tests := []struct {
		name      string
		served    map[string][]string
		options   Options
		fail      bool
		want      optionalAPIs
		wantError bool
	}{
		{name: "nothing served", options: allOptional()},
		{name: "CDI", options: allOptional(), served: map[string][]string{"cdi.kubevirt.io/v1beta1": {"datavolumes", "datasources"}},
			want: optionalAPIs{dataVolumes: true}},
		{name: "CDI's group without datavolumes", options: allOptional(), served: map[string][]string{"cdi.kubevirt.io/v1beta1": {"datasources"}}},
		{name: "both", options: allOptional(), served: map[string][]string{"cdi.kubevirt.io/v1beta1": {"datavolumes"},
			"snapshot.storage.k8s.io/v1": {"volumesnapshots", "volumesnapshotclasses"}},
			want: optionalAPIs{dataVolumes: true, volumeSnapshots: true}},
		{name: "an API the options cannot use is not looked at", options: Options{},
			served: map[string][]string{"cdi.kubevirt.io/v1beta1": {"datavolumes"}, "snapshot.storage.k8s.io/v1": {"volumesnapshots"}}},
		{name: "discovery fails", options: allOptional(), fail: true, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &fakeDiscovery{resources: map[string][]string{}, fail: tt.fail}
			for gv, rs := range tt.served {
				d.set(gv, rs...)
			}
			got, err := probeOptionalAPIs(d, tt.options)
			if tt.wantError {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestWatchOptionalAPIs: the watcher reports once, when the answer differs from the one the
// controllers started with; failed discoveries in between are no change.
func TestWatchOptionalAPIs(t *testing.T) {
	d := &fakeDiscovery{resources: map[string][]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changed := make(chan optionalAPIs, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchOptionalAPIs(ctx, d, allOptional(), optionalAPIs{}, 5*time.Millisecond, func(now optionalAPIs) { changed <- now })
	}()

	waitAsked := func(n int) {
		require.Eventually(t, func() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.asked >= n }, 10*time.Second, time.Millisecond)
	}
	waitAsked(4)
	d.setFail(true)
	waitAsked(8)
	select {
	case now := <-changed:
		t.Fatalf("no change yet, reported %v", now)
	default:
	}
	d.setFail(false)
	d.set("snapshot.storage.k8s.io/v1", "volumesnapshots")
	select {
	case now := <-changed:
		assert.Equal(t, optionalAPIs{volumeSnapshots: true}, now)
	case <-ctx.Done():
		t.Fatal("the VolumeSnapshot API was not noticed")
	}
	<-done
	assert.Empty(t, changed, "one report")
	assert.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded), "the watcher stopped by itself")
}
