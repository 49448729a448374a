package virtctl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"

	exportvalidation "github.com/hangarvm/hangar/pkg/apis/export/validation"
)

// TestMemoryDumpExportName: whatever the claim's name, the export's is one virt-api takes (a
// DNS label short enough for its Service's name).
func TestMemoryDumpExportName(t *testing.T) {
	tests := []struct{ claim, want string }{
		{claim: "dump", want: "export-dump"},
		{claim: "dump.vm-1.example", want: "export-dump-vm-1-example"},
		{claim: strings.Repeat("a", 60), want: "export-" + strings.Repeat("a", exportvalidation.MaxNameLength-len("export-"))},
		{claim: strings.Repeat("a", exportvalidation.MaxNameLength-len("export-")-1) + ".b", want: "export-" + strings.Repeat("a", exportvalidation.MaxNameLength-len("export-")-1)},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			got := memoryDumpExportName(tt.claim)
			assert.Equal(t, tt.want, got)
			assert.Empty(t, validation.IsDNS1123Label(got))
			assert.LessOrEqual(t, len(got), exportvalidation.MaxNameLength)
		})
	}
}
