package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// amplified is an array of n empty objects: 3 bytes each, a struct each once decoded.
func amplified(n int) string { return "[" + strings.Repeat("{},", n-1) + "{}]" }

func TestCheckShape(t *testing.T) {
	// 64 kept events of the fullest state the launcher reports.
	fullest := State{UID: "u", Interfaces: make([]Interface, 16), Agent: &Agent{Interfaces: make([]AgentInterface, MaxAgentInterfaces)}}
	for i := range fullest.Agent.Interfaces {
		fullest.Agent.Interfaces[i].IPs = make([]string, MaxAgentIPs)
	}
	events := Events{State: fullest}
	for range 64 {
		events.Events = append(events.Events, Event{State: fullest})
	}
	full, err := json.Marshal(events)
	require.NoError(t, err)
	require.Less(t, len(full), MaxAnswer)
	tests := []struct {
		name, answer string
		refused      string
	}{
		{"a state", `{"uid":"u","phase":"Running","interfaces":[{"name":"default","mac":"52:54:00:00:00:01"}],"seq":7}`, ""},
		{"the launcher's fullest events answer", string(full), ""},
		{"brackets and commas inside strings", `{"message":"[[[[,,,,{{{{\"]]]]"}`, ""},
		{"an escaped backslash before a quote", `{"a":"\\","b":[1,2]}`, ""},
		{"not JSON", `]]],,,}`, ""},
		{"512 elements", "{\"events\":" + amplified(MaxAnswerElements) + "}", ""},
		{"513 elements", "{\"events\":" + amplified(MaxAnswerElements+1) + "}", "more than 512 elements"},
		{"an object of 513 members", "{" + strings.Repeat(`"a":0,`, MaxAnswerElements) + `"a":0}`, "more than 512 elements"},
		{"16 levels", strings.Repeat("[", 16) + strings.Repeat("]", 16), ""},
		{"17 levels", strings.Repeat("[", 17) + strings.Repeat("]", 17), "deeper than 16"},
		{"many short lists", "[" + strings.Repeat(amplified(500)+",", 140) + "[]]", "more than 65536 values"},
		{"the amplification of a MiB", amplified(MaxAnswer / 3), "more than 512 elements"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkShape([]byte(tc.answer))
			if tc.refused == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.refused)
			}
		})
	}
}

// elements counts the slice elements and map entries of a decoded value, recursively: what
// the decoder allocated a struct or an entry for.
func elements(v reflect.Value) (total, longest int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return elements(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			t, l := elements(v.Field(i))
			total, longest = total+t, max(longest, l)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return 0, 0
		}
		total, longest = v.Len(), v.Len()
		for i := range v.Len() {
			t, l := elements(v.Index(i))
			total, longest = total+t, max(longest, l)
		}
	case reflect.Map:
		total, longest = v.Len(), v.Len()
		for it := v.MapRange(); it.Next(); {
			t, l := elements(it.Value())
			total, longest = total+t, max(longest, l)
		}
	}
	return total, longest
}

// answerTypes are what a launcher answers with, one of each.
func answerTypes() []any {
	return []any{&Health{}, &State{}, &Events{}, &Stats{}, &v1.VirtualMachineInstanceGuestAgentInfo{}, &Error{}}
}

// FuzzDecodeAnswer: whatever a launcher answers, decoding it into any answer type neither
// panics nor allocates past the shape bounds: an accepted answer has no list longer than
// MaxAnswerElements and no more than MaxAnswerValues elements in all.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"uid":"u","phase":"Running","seq":1}`,
		`{"events":[{"seq":1,"state":{"uid":"u"}}],"state":{"uid":"u","interfaces":[{"name":"a"}]}}`,
		`{"vcpus":[{"id":0},{"id":1}],"disks":[{"name":"root"}],"memory":{}}`,
		`{"userList":[{},{}],"fsInfo":{"disks":[{"disk":[{}]}]}}`,
		amplified(600),
		`{"a":"\\"}`,
		`[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range answerTypes() {
			out := reflect.New(reflect.TypeOf(typ).Elem()).Interface()
			if err := decodeAnswer(data, out); err != nil {
				continue
			}
			total, longest := elements(reflect.ValueOf(out))
			if longest > MaxAnswerElements || total > MaxAnswerValues {
				t.Fatalf("%T decoded %d elements, a list of %d, from %q", out, total, longest, data)
			}
		}
	})
}
