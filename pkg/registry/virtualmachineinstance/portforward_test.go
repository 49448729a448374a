package virtualmachineinstance

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		port, protocol string
		want           Target
		errs           []string
	}{
		{port: "22", want: Target{Port: 22, Protocol: "tcp"}},
		{port: "22", protocol: "tcp", want: Target{Port: 22, Protocol: "tcp"}},
		{port: "53", protocol: "udp", want: Target{Port: 53, Protocol: "udp"}},
		{port: "65535", protocol: "udp", want: Target{Port: 65535, Protocol: "udp"}},
		{port: "0", errs: []string{"port: Invalid value: 0: must be between 1 and 65535"}},
		{port: "65536", errs: []string{"port: Invalid value: 65536: must be between 1 and 65535"}},
		{port: "-1", errs: []string{"port: Invalid value: -1"}},
		{port: "ssh", errs: []string{`port: Invalid value: "ssh": must be a number`}},
		{port: "22", protocol: "sctp", errs: []string{`protocol: Unsupported value: "sctp"`}},
		{port: "22", protocol: "TCP", errs: []string{`protocol: Unsupported value: "TCP"`}},
		{port: "0", protocol: "icmp", errs: []string{"port: Invalid value", "protocol: Unsupported value"}},
	} {
		t.Run(tc.port+"/"+tc.protocol, func(t *testing.T) {
			got, errs := ParseTarget(tc.port, tc.protocol)
			if len(tc.errs) == 0 {
				assert.Empty(t, errs)
				assert.Equal(t, tc.want, got)
				return
			}
			assert.Len(t, errs, len(tc.errs))
			for i, want := range tc.errs {
				if i < len(errs) {
					assert.Contains(t, errs[i].Error(), want)
				}
			}
		})
	}
}
