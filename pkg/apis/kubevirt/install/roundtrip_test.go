package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	kubevirtfuzzer "github.com/hangarvm/hangar/pkg/apis/kubevirt/fuzzer"
)

// TestRoundTripTypes converts random objects internal → v1/v1alpha3 → JSON/YAML/protobuf-less
// codecs → internal and checks nothing is lost, for every kind of the group.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, kubevirtfuzzer.Funcs)
}
