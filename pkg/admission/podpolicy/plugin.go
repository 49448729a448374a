package podpolicy

import (
	"context"
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// PluginName is the admission plugin's name in virt-api's chain; like any plugin it can be
// turned off with --disable-admission-plugins.
const PluginName = "HangarLauncherPod"

var (
	vmiResource  = kubevirt.Resource("virtualmachineinstances")
	vmResource   = kubevirt.Resource("virtualmachines")
	vmiKind      = kubevirt.Kind("VirtualMachineInstance")
	vmKind       = kubevirt.Kind("VirtualMachine")
	templateRoot = field.NewPath("spec", "template")
)

// Register adds the plugin to virt-api's admission plugins (as kubernetes/sample-apiserver
// registers its BanFlunder).
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

// Plugin refuses the creates of instances, and the creates and updates that make a
// VirtualMachine run, whose launcher pod the cluster would refuse.
type Plugin struct {
	*admission.Handler
	checker *Checker
}

var (
	_ admission.ValidationInterface     = &Plugin{}
	_ admission.InitializationValidator = &Plugin{}
	_ WantsChecker                      = &Plugin{}
)

// WantsChecker is a plugin that needs the launcher pod checker.
type WantsChecker interface {
	SetChecker(*Checker)
	admission.InitializationValidator
}

// SetChecker gives the plugin its checker.
func (p *Plugin) SetChecker(c *Checker) { p.checker = c }

// ValidateInitialization makes sure the plugin got its checker.
func (p *Plugin) ValidateInitialization() error {
	if p.checker == nil {
		return errors.New(PluginName + ": no launcher pod checker")
	}
	return nil
}

// Validate checks the launcher pod of an instance being created, or of the instance a
// VirtualMachine will start once this write is stored.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case vmiResource:
		vmi, ok := a.GetObject().(*kubevirt.VirtualMachineInstance)
		if !ok || a.GetOperation() != admission.Create {
			return nil // an instance's spec cannot change after its creation
		}
		refusal, err := p.checker.CheckInstance(ctx, vmi)
		if err != nil || refusal == nil {
			return err
		}
		name := a.GetName()
		if vmi.GenerateName != "" {
			// A replica set's instances get random names: a message without the name stays the
			// same from one try to the next, so the set's status does not change every time.
			name = ""
		}
		return refusal.Error(vmiResource, vmiKind, name, nil)
	case vmResource:
		vm, ok := a.GetObject().(*kubevirt.VirtualMachine)
		if !ok {
			return nil
		}
		switch a.GetOperation() {
		case admission.Create:
			if !StartsOnCreate(vm) {
				return nil // a Halted or Manual VM pays for no pod build
			}
		case admission.Update:
			old, ok := a.GetOldObject().(*kubevirt.VirtualMachine)
			if !ok || !StartsOnUpdate(old, vm) {
				return nil
			}
		default:
			return nil
		}
		refusal, err := p.checker.CheckVirtualMachine(ctx, vm)
		if err != nil || refusal == nil {
			return err
		}
		return refusal.Error(vmResource, vmKind, a.GetName(), templateRoot)
	}
	return nil
}

// runs are the run strategies under which the controller starts an instance without a start
// request.
func runs(s kubevirt.VirtualMachineRunStrategy) bool {
	return s == kubevirt.RunStrategyAlways || s == kubevirt.RunStrategyRerunOnFailure || s == kubevirt.RunStrategyOnce
}

// StartsOnCreate says whether creating vm starts an instance.
func StartsOnCreate(vm *kubevirt.VirtualMachine) bool {
	return runs(vm.Spec.EffectiveRunStrategy())
}

// StartsOnUpdate says whether an update of a VM from old to vm starts an instance: its run
// strategy switches from Halted or Manual to one that runs, and it has no instance. A VM with
// an instance (running, or still stopping) is not checked: that instance's pod may already
// count in the namespace's quota, so the check would count it twice; the new instance's
// create is checked anyway.
func StartsOnUpdate(old, vm *kubevirt.VirtualMachine) bool {
	return !runs(old.Spec.EffectiveRunStrategy()) && runs(vm.Spec.EffectiveRunStrategy()) && !old.Status.Created
}

// initializer hands the checker to the plugins that want it.
type initializer struct{ checker *Checker }

// NewInitializer returns the plugin initializer that gives plugins the checker.
func NewInitializer(c *Checker) admission.PluginInitializer { return initializer{checker: c} }

func (i initializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(WantsChecker); ok {
		w.SetChecker(i.checker)
		i.checker.inUse.Store(true)
	}
}

// InUse says whether an enabled admission plugin got the checker: the start action checks
// only then, so --disable-admission-plugins=HangarLauncherPod turns every check off.
func (c *Checker) InUse() bool { return c.inUse.Load() }
