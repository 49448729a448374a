// Package fuzzer holds the fuzzer functions of the instancetype.kubevirt.io group for
// round-trip tests. The group has no defaults, so random objects round-trip as they are.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
)

// Funcs returns the group's fuzzer functions: none beyond the generic ones.
var Funcs = func(runtimeserializer.CodecFactory) []interface{} {
	return nil
}
