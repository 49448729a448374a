package virtualmachineinstance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/serving"
)

// LauncherAddresses finds where an instance's guest is reached: the IP of its launcher pod,
// as the pod object in kube-apiserver has it.
type LauncherAddresses interface {
	LauncherPodIP(ctx context.Context, vmi *kubevirt.VirtualMachineInstance) (netip.Addr, error)
}

// PortForwardDoc documents the portforward routes.
const PortForwardDoc = "a connection to a port of the guest: a TCP connection's bytes, or a UDP flow's datagrams a message each"

// PortForwardPaths are the routes of portforward below an object of kind ("vm" or "vmi"),
// with KubeVirt's operation IDs: the protocol is TCP when the path does not name one.
func PortForwardPaths(kind string) []serving.Below {
	return []serving.Below{
		{Path: "/{port}", Operation: "v1" + kind + "-PortForward"},
		{Path: "/{port}/{protocol}", Operation: "v1" + kind + "-PortForwardWithProtocol"},
	}
}

// PortForwardREST serves KubeVirt's portforward of an instance or of a VM's instance: a
// websocket whose binary messages carry the bytes of one TCP connection to a port of the
// guest, or the datagrams of one UDP flow (a message a datagram). virt-api proxies it to the
// node agent, which dials the launcher pod's IP (the pod object's, never what the launcher or
// the guest report) from outside the pod: the masquerade binding forwards the port to the
// guest as for any other client on the pod network, a bridged guest holds that IP itself.
// A tenant so reaches what a pod port-forward, or any pod of the cluster, reaches.
//
// Authorization is the console's: the websocket arrives as GET, and "create" on
// <resource>/portforward is required as well (StreamREST).
type PortForwardREST struct {
	// resource is virtualmachineinstances or virtualmachines; a VM's instance has its name.
	resource string
	// vms reads VMs for the VM route (nil for instances).
	vms        rest.Getter
	vmis       rest.Getter
	nodes      Nodes
	addresses  LauncherAddresses
	authorizer authorizer.Authorizer
	limits     *StreamLimits
}

var (
	_ rest.Connecter                = &PortForwardREST{}
	_ rest.GroupVersionKindProvider = &PortForwardREST{}
)

// NewPortForwardREST returns virtualmachineinstances/portforward.
func NewPortForwardREST(vmis rest.Getter, nodes Nodes, addresses LauncherAddresses, authz authorizer.Authorizer, limits *StreamLimits) *PortForwardREST {
	return &PortForwardREST{resource: "virtualmachineinstances", vmis: vmis, nodes: nodes, addresses: addresses, authorizer: authz, limits: limits}
}

// ForVMs returns virtualmachines/portforward: the same, to the instance of the VM read by vms.
func (r *PortForwardREST) ForVMs(vms rest.Getter) *PortForwardREST {
	vm := *r
	vm.resource, vm.vms = "virtualmachines", vms
	return &vm
}

// New returns the type documented as the response: a Status, sent only on errors.
func (r *PortForwardREST) New() runtime.Object { return &metav1.Status{} }

// Destroy does nothing.
func (r *PortForwardREST) Destroy() {}

// GroupVersionKind says errors come as core v1 Status objects.
func (r *PortForwardREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return metav1.SchemeGroupVersion.WithKind("Status")
}

// ConnectMethods: a websocket opens with GET.
func (r *PortForwardREST) ConnectMethods() []string { return []string{http.MethodGet} }

// NewConnectOptions: the port and protocol are path parameters.
func (r *PortForwardREST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// Target is where a port-forward goes in the guest.
type Target struct {
	Port     int
	Protocol string
}

// ParseTarget checks a port-forward's path parameters: a port from 1 to 65535 and a protocol
// tcp or udp (tcp when empty), as KubeVirt's clients send them.
func ParseTarget(port, protocol string) (Target, field.ErrorList) {
	var errs field.ErrorList
	t := Target{Protocol: protocol}
	n, err := strconv.Atoi(port)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(field.NewPath("port"), port, "must be a number"))
	case n < 1 || n > 65535:
		errs = append(errs, field.Invalid(field.NewPath("port"), n, "must be between 1 and 65535"))
	default:
		t.Port = n
	}
	if t.Protocol == "" {
		t.Protocol = "tcp"
	}
	if t.Protocol != "tcp" && t.Protocol != "udp" {
		errs = append(errs, field.NotSupported(field.NewPath("protocol"), protocol, []string{"tcp", "udp"}))
	}
	return t, errs
}

// Connect checks the caller may forward, the target and the instance, finds the launcher
// pod's IP and returns the proxy to the node agent.
func (r *PortForwardREST) Connect(ctx context.Context, name string, _ runtime.Object, responder rest.Responder) (http.Handler, error) {
	if err := r.authorizeCreate(ctx, name); err != nil {
		return nil, err
	}
	target, errs := ParseTarget(serving.PathParam(ctx, "port"), serving.PathParam(ctx, "protocol"))
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "subresources.kubevirt.io", Kind: "PortForward"}, name, errs)
	}
	vmi, err := r.instance(ctx, name)
	if err != nil {
		return nil, err
	}
	if vmi.Status.Phase != kubevirt.Running {
		return nil, conflict(name, "Unable to connect to VirtualMachineInstance because phase is %s instead of %s", vmi.Status.Phase, kubevirt.Running)
	}
	if hasCondition(vmi, kubevirt.VirtualMachineInstancePaused) {
		return nil, conflict(name, "VMI is paused")
	}
	if r.nodes == nil || r.addresses == nil {
		return nil, nodeError(name, errNoNodes)
	}
	ip, err := r.addresses.LauncherPodIP(ctx, vmi)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no address to forward to for instance %s: %v", name, err))
	}
	location, err := r.nodes.InstanceURL(ctx, vmi.Status.NodeName, vmi.Namespace, vmi.Name,
		fmt.Sprintf("portforward/%d/%s", target.Port, target.Protocol))
	if err != nil {
		return nil, nodeError(name, err)
	}
	location.RawQuery = "address=" + ip.String()
	handler := proxy.NewUpgradeAwareHandler(location, r.nodes.Transport(), false, true, proxy.NewErrorResponder(responder))
	user, _ := genericapirequest.UserFrom(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		closed, err := r.limits.open(user.GetName(), vmi.Namespace+"/"+vmi.Name)
		if err != nil {
			responder.Error(err)
			return
		}
		defer closed()
		stripCredentials(req.Header)
		handler.ServeHTTP(writeDeadlines{ResponseWriter: w, timeout: StreamWriteTimeout}, req)
	}), nil
}

// instance is the instance of name: itself, or the running instance of the VM name.
func (r *PortForwardREST) instance(ctx context.Context, name string) (*kubevirt.VirtualMachineInstance, error) {
	if r.vms == nil {
		return getInstance(ctx, r.vmis, name)
	}
	if _, err := r.vms.Get(ctx, name, &metav1.GetOptions{}); err != nil {
		return nil, err
	}
	vmi, err := getInstance(ctx, r.vmis, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewConflict(kubevirt.Resource("virtualmachine"), name, errors.New("VirtualMachine is not running"))
	}
	return vmi, err
}

// authorizeCreate requires "create" on <resource>/portforward in the request's group.
func (r *PortForwardREST) authorizeCreate(ctx context.Context, name string) error {
	return authorizeStreamCreate(ctx, r.authorizer, r.resource, "portforward", name)
}
