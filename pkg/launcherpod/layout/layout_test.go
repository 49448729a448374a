package layout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHostname(t *testing.T) {
	for _, tt := range []struct{ name, spec, want string }{
		{"web", "", "web"},
		{"web.1", "", "web"},
		{"web", "db-0", "db-0"},
		{strings.Repeat("a", 70), "", strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + "-b", "", strings.Repeat("a", 62)},
	} {
		assert.Equal(t, tt.want, Hostname(tt.name, tt.spec), "%s/%s", tt.name, tt.spec)
	}
}
