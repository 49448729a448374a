package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	kubevirtfuzzer "github.com/hangarvm/hangar/pkg/apis/kubevirt/fuzzer"
)

// TestRoundTripTypes converts random objects internal → v1/v1alpha3 → JSON, YAML and
// protobuf → internal and checks nothing is lost, for every kind of the group. Protobuf
// fails here for a type go-to-protobuf cannot express (hack/update-codegen.sh).
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, kubevirtfuzzer.Funcs)
}
