package v1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The JSON of a migration state is what the lead's controller, the node agents and KubeVirt's
// clients exchange: its names must be KubeVirt's, letter for letter.
func TestMigrationStateJSONNames(t *testing.T) {
	now := metav1.Now()
	state := VirtualMachineInstanceMigrationState{
		StartTimestamp: &now, EndTimestamp: &now, TargetNodeDomainReadyTimestamp: &now, TargetNodeDomainDetected: true,
		TargetNodeAddress: "a", TargetDirectMigrationNodePorts: map[string]int32{"1": 1}, TargetNode: "n2", TargetPod: "p2",
		SourceNode: "n1", SourcePod: "p1", Completed: true, Failed: true, AbortRequested: true, AbortStatus: MigrationAbortFailed,
		FailureReason: "r", MigrationUid: "u", Mode: MigrationPreCopy,
		MigrationConfiguration: &MigrationConfiguration{ParallelMigrationsPerCluster: ptr.To[uint32](5),
			ParallelOutboundMigrationsPerNode: ptr.To[uint32](2), CompletionTimeoutPerGiB: ptr.To[int64](150),
			ProgressTimeout: ptr.To[int64](150), AllowAutoConverge: ptr.To(false), AllowPostCopy: ptr.To(false)},
	}
	raw, err := json.Marshal(state)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &fields))
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	assert.ElementsMatch(t, []string{"startTimestamp", "endTimestamp", "targetNodeDomainReadyTimestamp", "targetNodeDomainDetected",
		"targetNodeAddress", "targetDirectMigrationNodePorts", "targetNode", "targetPod", "sourceNode", "sourcePod",
		"completed", "failed", "abortRequested", "abortStatus", "failureReason", "migrationUid", "mode",
		"migrationConfiguration"}, names)

	status, err := json.Marshal(VirtualMachineInstanceStatus{MigrationState: &state, MigrationMethod: BlockMigration, EvacuationNodeName: "n1"})
	require.NoError(t, err)
	assert.Contains(t, string(status), `"migrationMethod":"BlockMigration"`)
	assert.Contains(t, string(status), `"evacuationNodeName":"n1"`)
	assert.Contains(t, string(status), `"migrationState":{`)
}
