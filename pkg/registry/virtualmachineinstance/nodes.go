package virtualmachineinstance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/nodeclient"
)

// Nodes reaches the node agent (virt-handler) that runs an instance.
type Nodes interface {
	// Put sends a guest command to the instance's node.
	Put(ctx context.Context, node, namespace, name, call string) error
	// Call sends one request of the instance to its node and returns the answer's body.
	Call(ctx context.Context, node, namespace, name, method, call string, body []byte) ([]byte, error)
	// InstanceURL is where the node serves a call or stream of the instance.
	InstanceURL(ctx context.Context, node, namespace, name, call string) (*url.URL, error)
	// Transport carries requests and upgraded streams to nodes.
	Transport() *http.Transport
}

// getInstance reads an instance through the storage.
func getInstance(ctx context.Context, vmis rest.Getter, name string) (*kubevirt.VirtualMachineInstance, error) {
	obj, err := vmis.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*kubevirt.VirtualMachineInstance), nil
}

// hasCondition says whether an instance has a condition with status True.
func hasCondition(vmi *kubevirt.VirtualMachineInstance, t kubevirt.VirtualMachineInstanceConditionType) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t && c.Status == "True" {
			return true
		}
	}
	return false
}

// nodeError turns a node's refusal or absence into an API error.
func nodeError(name string, err error) error {
	var handlerErr *nodeclient.HandlerError
	if errors.As(err, &handlerErr) {
		switch handlerErr.Code {
		case http.StatusConflict:
			return conflict(name, "%s", handlerErr.Message)
		case http.StatusNotFound:
			return apierrors.NewServiceUnavailable(fmt.Sprintf("the node does not run instance %s yet: %s", name, handlerErr.Message))
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("cannot reach the node of instance %s: %v", name, err))
}

func conflict(name, format string, args ...interface{}) error {
	return apierrors.NewConflict(kubevirt.Resource("virtualmachineinstance"), name, fmt.Errorf(format, args...))
}
