package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	snapshotfuzzer "github.com/hangarvm/hangar/pkg/apis/snapshot/fuzzer"
)

// TestRoundTripTypes converts random objects internal → v1beta1 → JSON, YAML and protobuf →
// internal and checks nothing is lost, for every kind of the group.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, snapshotfuzzer.Funcs)
}
