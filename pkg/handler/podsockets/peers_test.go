package podsockets

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestInPodCgroup(t *testing.T) {
	const uid types.UID = "0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e"
	tests := []struct {
		name    string
		cgroups string
		want    bool
	}{
		{"cgroupfs v1", "4:memory:/kubepods/besteffort/pod0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e/4f1c\n1:cpu:/kubepods/besteffort/pod0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e/4f1c\n0::/\n", true},
		{"cgroupfs guaranteed, v2", "0::/kubepods/pod0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e/abc\n", true},
		{"systemd driver", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b7a6c1e_2f4d_4c1b_9a7e_5d3c2b1a0f9e.slice/cri-containerd-1.scope\n", true},
		{"cgroup namespace view", "0::/../../kubepods-besteffort-pod0b7a6c1e_2f4d_4c1b_9a7e_5d3c2b1a0f9e.slice/cri-containerd-1.scope\n", true},
		{"another pod", "4:memory:/kubepods/besteffort/pod11111111-2f4d-4c1b-9a7e-5d3c2b1a0f9e/4f1c\n", false},
		{"a host daemon", "9:name=systemd:/\n4:memory:/system.slice/containerd.service\n0::/\n", false},
		{"uid as a prefix of an element", "0::/kubepods/pod0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e0/x\n", false},
		{"uid without the pod prefix", "0::/kubepods/0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e/x\n", false},
		{"garbage", "not a cgroup file", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, InPodCgroup([]byte(tt.cgroups), uid))
		})
	}
}
