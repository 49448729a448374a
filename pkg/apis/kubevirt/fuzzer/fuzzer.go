// Package fuzzer holds the fuzzer functions of the kubevirt.io group for round-trip tests.
// Decoding applies defaults, so random objects are defaulted once here: a round trip must
// then return them unchanged.
package fuzzer

import (
	"k8s.io/apimachinery/pkg/conversion"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Funcs returns the group's fuzzer functions.
var Funcs = func(runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(s *kubevirt.VirtualMachineInstanceSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			defaulted(s, v1.Convert_kubevirt_VirtualMachineInstanceSpec_To_v1_VirtualMachineInstanceSpec,
				v1.DefaultVirtualMachineInstanceSpec,
				v1.Convert_v1_VirtualMachineInstanceSpec_To_kubevirt_VirtualMachineInstanceSpec)
		},
		func(s *kubevirt.VirtualMachineSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Running == nil && s.RunStrategy == nil {
				halted := kubevirt.RunStrategyHalted
				s.RunStrategy = &halted
			}
		},
		func(s *kubevirt.VirtualMachineInstanceReplicaSetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			defaulted(s, v1.Convert_kubevirt_VirtualMachineInstanceReplicaSetSpec_To_v1_VirtualMachineInstanceReplicaSetSpec,
				v1.SetDefaults_VirtualMachineInstanceReplicaSetSpec,
				v1.Convert_v1_VirtualMachineInstanceReplicaSetSpec_To_kubevirt_VirtualMachineInstanceReplicaSetSpec)
		},
	}
}

// defaulted applies v1's defaults to an internal object through a conversion and back.
func defaulted[I, E any](in *I, toExternal func(*I, *E, conversion.Scope) error, setDefaults func(*E), toInternal func(*E, *I, conversion.Scope) error) {
	var out E
	if err := toExternal(in, &out, nil); err != nil {
		panic(err)
	}
	setDefaults(&out)
	if err := toInternal(&out, in, nil); err != nil {
		panic(err)
	}
}
