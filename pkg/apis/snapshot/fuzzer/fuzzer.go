// Package fuzzer holds the fuzzer functions of the snapshot.kubevirt.io group for round-trip
// tests.
package fuzzer

import (
	kubevirtfuzzer "github.com/hangarvm/hangar/pkg/apis/kubevirt/fuzzer"
)

// Funcs returns the group's fuzzer functions: kubevirt.io's, for the VirtualMachine a
// snapshot's content keeps.
var Funcs = kubevirtfuzzer.Funcs
