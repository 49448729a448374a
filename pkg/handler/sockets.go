package handler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Sockets finds the socket directory of an instance's launcher pod on this node.
type Sockets struct {
	// Pods is the kubelet's pods directory.
	Pods *podsockets.Root
	// NodeName is this node.
	NodeName string
}

// errNoPod means the instance has no launcher pod on this node (yet).
type errNoPod struct{ vmi string }

func (e errNoPod) Error() string {
	return fmt.Sprintf("instance %s has no launcher pod on this node", e.vmi)
}

// PodUID is the instance's launcher pod on this node, as virt-controller recorded it.
func (s *Sockets) PodUID(vmi *v1.VirtualMachineInstance) (types.UID, error) {
	var found types.UID
	for uid, node := range vmi.Status.ActivePods {
		if node != s.NodeName {
			continue
		}
		if found != "" {
			return "", fmt.Errorf("instance %s/%s has two launcher pods on this node (%s, %s)", vmi.Namespace, vmi.Name, found, uid)
		}
		found = uid
	}
	if found == "" {
		return "", errNoPod{vmi.Namespace + "/" + vmi.Name}
	}
	return found, nil
}

// Dir opens the socket directory of the instance's launcher pod on this node.
func (s *Sockets) Dir(vmi *v1.VirtualMachineInstance) (*podsockets.Dir, error) {
	uid, err := s.PodUID(vmi)
	if err != nil {
		return nil, err
	}
	return s.Pods.Dir(uid, layout.SocketVolume)
}
