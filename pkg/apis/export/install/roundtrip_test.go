package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	exportfuzzer "github.com/hangarvm/hangar/pkg/apis/export/fuzzer"
)

// TestRoundTripTypes converts random exports internal → v1beta1 → JSON, YAML and protobuf →
// internal and checks nothing is lost.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, exportfuzzer.Funcs)
}
