package bodyguard

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
)

// protobufMagic starts every protobuf body of the Kubernetes API: then comes a runtime.Unknown
// whose field 2 holds the object's own encoding.
var protobufMagic = []byte("k8s\x00")

// maxProtobufDepth bounds how deep checkProtobuf looks. A Quantity is a message whose field 1
// is the string ParseQuantity reads; the deepest in the kubevirt.io types sits 9 messages
// below the envelope (a replica set's or VM's template → spec → domain → resources →
// requests entry → Quantity), so 32 leaves room for growth while bounding the work an
// adversarial body of nested messages can cause to depth × size.
const maxProtobufDepth = 32

// checkProtobuf looks at every length-delimited field of a protobuf body without its schema:
// each is taken both as a string (refused if it is a quantity too costly to parse) and, when
// it parses as one, as a nested message to look into. The generated decoders skip fields
// they do not know, so only the fields of real Quantities are parsed; looking at every field
// over-approximates them. A body that is not protobuf passes: the decoder refuses it.
func checkProtobuf(body []byte) string {
	if !bytes.HasPrefix(body, protobufMagic) {
		return ""
	}
	return walkProtobuf(body[len(protobufMagic):], 0)
}

func walkProtobuf(b []byte, depth int) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "" // not a message
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ""
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if p := Problem(string(v)); p != "" {
			return p
		}
		if depth < maxProtobufDepth {
			if p := walkProtobuf(v, depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}
