package api

import (
	"encoding/json"
	"fmt"
)

// A launcher is the tenant's, and JSON amplifies: in MaxAnswer bytes, [{},{},...] is some
// 350,000 elements, each decoded into a struct of hundreds of bytes. So the handler checks an
// answer's shape before it decodes anything: how deep it nests, how long each array or object
// is, and how many values it holds in all. Within these bounds an answer decodes into a few
// MiB at most, whatever its bytes; the real answers are inside them.
const (
	// MaxAnswerDepth bounds nesting: the deepest answer (events → state → agent →
	// interfaces → ips) nests eight levels.
	MaxAnswerDepth = 16
	// MaxAnswerElements bounds each array and object: the longest are the guest agent's
	// command list (the handler keeps 512) and the statistics of a guest's vCPUs (288).
	MaxAnswerElements = 512
	// MaxAnswerValues bounds the members and elements of the whole answer: the launcher's
	// 64 kept events of the fullest states (16 interfaces, the agent's 32 with 16 addresses
	// each) are some 46,000. The largest element decodes into about 150 bytes, so an answer
	// within the bounds decodes into some 10 MiB at most.
	MaxAnswerValues = 64 << 10
)

// checkShape scans a JSON answer without decoding it and refuses one past the bounds. It
// allocates nothing. What is not JSON passes: json.Unmarshal refuses it whole before it
// decodes anything.
func checkShape(data []byte) error {
	// open[i] says whether the i-th open container has had no element yet.
	var open [MaxAnswerDepth]bool
	var elements [MaxAnswerDepth]int
	depth, values := 0, 0
	// first counts the first element of the innermost container when a value (or, in an
	// object, a member's name) starts in it; commas count the others.
	first := func() {
		if depth > 0 && open[depth-1] {
			open[depth-1] = false
			values++
		}
	}
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case ' ', '\t', '\n', '\r', ':':
		case '"':
			first()
			inString = true
		case '[', '{':
			first()
			if depth == MaxAnswerDepth {
				return fmt.Errorf("nested deeper than %d levels", MaxAnswerDepth)
			}
			open[depth], elements[depth] = true, 1
			depth++
		case ']', '}':
			if depth == 0 {
				return nil // not JSON
			}
			depth--
		case ',':
			if depth == 0 {
				return nil
			}
			elements[depth-1]++
			values++
			if elements[depth-1] > MaxAnswerElements {
				return fmt.Errorf("an array or object of more than %d elements", MaxAnswerElements)
			}
		default:
			first()
		}
		if values > MaxAnswerValues {
			return fmt.Errorf("more than %d values", MaxAnswerValues)
		}
	}
	return nil
}

// decodeAnswer decodes a launcher's answer into out once its shape is within bounds.
func decodeAnswer(data []byte, out any) error {
	if err := checkShape(data); err != nil {
		return fmt.Errorf("answer refused before decoding: %w", err)
	}
	return json.Unmarshal(data, out)
}
