package v1

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Hangar's (and KubeVirt's) core kinds.
const GroupName = "kubevirt.io"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this version to a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version's types, conversions and defaults to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated conversion and defaulting functions register themselves in their own init.
	// The scale subresource of replica sets speaks autoscaling/v1, so whoever decodes this
	// API (the generated clientset included) needs that type too.
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults, autoscalingv1.AddToScheme)
}

// KnownTypes lists the kinds of this version; v1alpha3 registers the very same Go types,
// as KubeVirt does, so both versions share one schema.
func KnownTypes() []runtime.Object {
	return []runtime.Object{
		&VirtualMachine{}, &VirtualMachineList{},
		&VirtualMachineInstance{}, &VirtualMachineInstanceList{},
		&VirtualMachineInstanceReplicaSet{}, &VirtualMachineInstanceReplicaSetList{},
		&VirtualMachineInstanceMigration{}, &VirtualMachineInstanceMigrationList{},
	}
}

// ActionOptionTypes lists the bodies of the imperative actions. They exist only in v1: the
// server reads them as raw bodies, the generated clients encode them.
func ActionOptionTypes() []runtime.Object {
	return []runtime.Object{
		&StartOptions{}, &StopOptions{}, &RestartOptions{},
		&PauseOptions{}, &UnpauseOptions{}, &SoftRebootOptions{},
		&MigrateOptions{}, &AddVolumeOptions{}, &RemoveVolumeOptions{},
	}
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, KnownTypes()...)
	scheme.AddKnownTypes(SchemeGroupVersion, ActionOptionTypes()...)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return AddFieldLabelConversions(scheme, SchemeGroupVersion)
}

// AddFieldLabelConversions declares the field selectors of the group's kinds in a version:
// instances can be selected by node and phase, everything by name and namespace.
func AddFieldLabelConversions(scheme *runtime.Scheme, gv schema.GroupVersion) error {
	for _, kind := range []string{"VirtualMachine", "VirtualMachineInstance", "VirtualMachineInstanceReplicaSet", "VirtualMachineInstanceMigration"} {
		supported := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		if kind == "VirtualMachineInstance" {
			supported["status.nodeName"], supported["status.phase"] = true, true
			supported["status.migrationState.targetNode"] = true
		}
		err := scheme.AddFieldLabelConversionFunc(gv.WithKind(kind), func(label, value string) (string, string, error) {
			if !supported[label] {
				return "", "", fmt.Errorf("field label %q is not supported for %s", label, kind)
			}
			return label, value, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
