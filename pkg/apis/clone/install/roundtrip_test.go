package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	clonefuzzer "github.com/hangarvm/hangar/pkg/apis/clone/fuzzer"
)

// TestRoundTripTypes converts random clones internal → v1beta1 → JSON, YAML and protobuf →
// internal and checks nothing is lost.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, clonefuzzer.Funcs)
}
