// Package fuzzer holds the fuzzer functions of the export.kubevirt.io group for round-trip
// tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
)

// Funcs returns the group's fuzzer functions: none beyond the defaults, the types hold only
// plain fields and references.
func Funcs(runtimeserializer.CodecFactory) []interface{} { return nil }
