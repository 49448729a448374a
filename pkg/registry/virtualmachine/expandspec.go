package virtualmachine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// KubeVirt's expand-spec (GET virtualmachines/<name>/expand-spec) answers with the VM as its
// instance will be made: the template expanded with the instance type and preference (their
// revisions once the VM has used them) and defaulted, spec.instancetype and spec.preference
// removed. expand-vm-spec (PUT expand-vm-spec of a namespace, a VM as the body) does the same
// for a VM that is not stored, as `virtctl create vm` and UIs preview one.

// ExpandSpecREST serves virtualmachines/<name>/expand-spec.
type ExpandSpecREST struct {
	vms      rest.Getter
	expander *expander
}

var _ rest.Connecter = &ExpandSpecREST{}

// New returns a Status, the type of the errors; the answer itself is a kubevirt.io/v1 VM.
func (r *ExpandSpecREST) New() runtime.Object { return &metav1.Status{} }

// Destroy does nothing.
func (r *ExpandSpecREST) Destroy() {}

// GroupVersionKind of the errors.
func (r *ExpandSpecREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return metav1.SchemeGroupVersion.WithKind("Status")
}

// ConnectMethods: GET, as KubeVirt.
func (r *ExpandSpecREST) ConnectMethods() []string { return []string{http.MethodGet} }

// NewConnectOptions: none.
func (r *ExpandSpecREST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// Connect answers with the stored VM, expanded.
func (r *ExpandSpecREST) Connect(ctx context.Context, name string, _ runtime.Object, _ rest.Responder) (http.Handler, error) {
	obj, err := r.vms.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return r.expander.expandedVMHandler(ctx, obj.(*kubevirt.VirtualMachine))
}

// expandedVMHandler expands vm and answers with it as kubevirt.io/v1 JSON.
func (e *expander) expandedVMHandler(ctx context.Context, vm *kubevirt.VirtualMachine) (http.Handler, error) {
	tmpl, errs := e.ExpandedTemplate(ctx, vm)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), vm.Name, errs)
	}
	expanded := vm.DeepCopy()
	expanded.Spec.Template = tmpl
	expanded.Spec.Instancetype, expanded.Spec.Preference = nil, nil
	out := &v1.VirtualMachine{}
	if err := e.scheme.Convert(expanded, out, nil); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("convert VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err))
	}
	out.APIVersion, out.Kind = v1.SchemeGroupVersion.String(), "VirtualMachine"
	body, err := json.Marshal(out)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}), nil
}

// maxExpandBody bounds the VM a client sends to expand-vm-spec: a VM is small, and the body
// is decoded before anything else looks at it.
const maxExpandBody = 3 << 20

// ExpandVMSpec serves expand-vm-spec of a namespace: the body is a kubevirt.io VM, decoded
// (and defaulted) as a create's would be.
type ExpandVMSpec struct {
	expander *expander
	decoder  runtime.Decoder
	// infer resolves the matchers that infer from a volume, as a create would (infer.go).
	infer func(context.Context, *kubevirt.VirtualMachine) error
}

// Handler answers one request for the namespace in the context.
func (x *ExpandVMSpec) Handler(ctx context.Context, body io.Reader) (http.Handler, error) {
	raw, err := io.ReadAll(io.LimitReader(body, maxExpandBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read the VirtualMachine: %v", err))
	}
	if len(raw) > maxExpandBody {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a VirtualMachine of at most %d bytes", maxExpandBody))
	}
	// A body without apiVersion and kind is taken for a kubevirt.io/v1 VirtualMachine.
	defaultKind := v1.SchemeGroupVersion.WithKind("VirtualMachine")
	obj, _, err := x.decoder.Decode(raw, &defaultKind, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a VirtualMachine: %v", err))
	}
	vm, ok := obj.(*kubevirt.VirtualMachine)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %T, not a VirtualMachine", obj))
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	if vm.Namespace != "" && vm.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the VirtualMachine's namespace %q is not the request's %q", vm.Namespace, namespace))
	}
	vm.Namespace = namespace
	if x.infer != nil {
		if err := x.infer(ctx, vm); err != nil {
			return nil, err
		}
	}
	return x.expander.expandedVMHandler(ctx, vm)
}

// ExpandedTemplate is the VM's template as its instance will have it (for the launcher pod
// checks); the error is a 422 of the VM.
func (s *Storage) ExpandedTemplate(ctx context.Context, vm *kubevirt.VirtualMachine) (*kubevirt.VirtualMachineInstanceTemplateSpec, error) {
	tmpl, errs := s.ExpandSpec.expander.ExpandedTemplate(ctx, vm)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), vm.Name, errs)
	}
	return tmpl, nil
}
