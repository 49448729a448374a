package virtualmachineinstance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// The guest agent's subresources, as KubeVirt serves them under subresources.kubevirt.io:
// guestosinfo, userlist and filesystemlist (GET: what the agent reports, which the node
// agent read from the launcher and bounded) and freeze and unfreeze (PUT).

// GuestAgentREST serves one of guestosinfo, userlist and filesystemlist.
type GuestAgentREST struct {
	vmis  rest.Getter
	nodes Nodes
	call  string
}

var _ rest.Connecter = &GuestAgentREST{}

// NewGuestAgentREST returns the endpoint of call (guestosinfo, userlist or filesystemlist).
func NewGuestAgentREST(vmis rest.Getter, nodes Nodes, call string) *GuestAgentREST {
	return &GuestAgentREST{vmis: vmis, nodes: nodes, call: call}
}

// New returns a Status, the type of the errors; the answer itself is the node's JSON.
func (r *GuestAgentREST) New() runtime.Object { return &metav1.Status{} }

// Destroy does nothing.
func (r *GuestAgentREST) Destroy() {}

// GroupVersionKind of the errors.
func (r *GuestAgentREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return metav1.SchemeGroupVersion.WithKind("Status")
}

// ConnectMethods: GET, as KubeVirt.
func (r *GuestAgentREST) ConnectMethods() []string { return []string{http.MethodGet} }

// NewConnectOptions: none.
func (r *GuestAgentREST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// Connect checks the instance runs with a connected agent and answers with the node's report.
func (r *GuestAgentREST) Connect(ctx context.Context, name string, _ runtime.Object, _ rest.Responder) (http.Handler, error) {
	vmi, err := agentInstance(ctx, r.vmis, name)
	if err != nil {
		return nil, err
	}
	if r.nodes == nil {
		return nil, nodeError(name, errNoNodes)
	}
	body, err := r.nodes.Call(ctx, vmi.Status.NodeName, vmi.Namespace, vmi.Name, http.MethodGet, r.call, nil)
	if err != nil {
		return nil, nodeError(name, err)
	}
	if !json.Valid(body) {
		return nil, apierrors.NewInternalError(fmt.Errorf("the node's answer to %s is not JSON", r.call))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}), nil
}

// agentInstance is the named instance if its guest runs with the agent connected: KubeVirt's
// 409s otherwise.
func agentInstance(ctx context.Context, vmis rest.Getter, name string) (*kubevirt.VirtualMachineInstance, error) {
	vmi, err := getInstance(ctx, vmis, name)
	if err != nil {
		return nil, err
	}
	if vmi.Status.Phase != kubevirt.Running {
		return nil, conflict(name, "VMI is not running")
	}
	if !hasCondition(vmi, kubevirt.VirtualMachineInstanceAgentConnected) {
		return nil, conflict(name, "VMI does not have guest agent connected")
	}
	return vmi, nil
}

// Freeze serves virtualmachineinstances/freeze: the guest's file systems are frozen (for a
// consistent snapshot) and thawed after unfreezeTimeout (0: not by themselves).
func (c *Commands) Freeze(ctx context.Context, name string, body action.Body) error {
	opts := v1.FreezeUnfreezeTimeout{}
	// KubeVirt's body has no kind, so it has no protobuf form: JSON or YAML only.
	if body.MediaType == runtime.ContentTypeProtobuf {
		return apierrors.NewBadRequest("freeze takes a JSON or YAML body, not " + body.MediaType)
	}
	if len(body.Data) > 0 {
		if err := utilyaml.Unmarshal(body.Data, &opts); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot decode the request body: %v", err))
		}
	}
	if opts.UnfreezeTimeout == nil || opts.UnfreezeTimeout.Duration < 0 {
		return apierrors.NewBadRequest("freeze needs unfreezeTimeout, a duration of at least 0 (0: thaw only on unfreeze)")
	}
	if opts.UnfreezeTimeout.Duration.Seconds() > maxUnfreezeTimeoutSeconds {
		return apierrors.NewBadRequest(fmt.Sprintf("unfreezeTimeout must be at most %d seconds", maxUnfreezeTimeoutSeconds))
	}
	forward, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	return c.agentCall(ctx, name, "freeze", forward)
}

// maxUnfreezeTimeoutSeconds: KubeVirt carries the timeout as an int32 of seconds.
const maxUnfreezeTimeoutSeconds = 1<<31 - 1

// Unfreeze serves virtualmachineinstances/unfreeze.
func (c *Commands) Unfreeze(ctx context.Context, name string, _ action.Body) error {
	return c.agentCall(ctx, name, "unfreeze", nil)
}

func (c *Commands) agentCall(ctx context.Context, name, call string, body []byte) error {
	vmi, err := agentInstance(ctx, c.vmis, name)
	if err != nil {
		return err
	}
	if c.nodes == nil {
		return nodeError(name, errNoNodes)
	}
	if _, err := c.nodes.Call(ctx, vmi.Status.NodeName, vmi.Namespace, vmi.Name, http.MethodPut, call, body); err != nil {
		return nodeError(name, err)
	}
	return nil
}
