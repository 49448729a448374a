package clone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/snapshot"
)

// patchOp is one JSON patch (RFC 6902) operation, as a restore's spec.patches takes them.
type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

// annotationsKept are never filtered out: the restore needs its mark, and drops
// kubectl's last-applied configuration itself.
var annotationsKept = map[string]bool{
	snapshot.LastRestoreAnnotation:                     true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// targetPatches are the JSON patch operations that make the target from the VM kept in a
// snapshot's content, as KubeVirt's clone controller writes them into its restore: each
// interface's MAC replaced (by spec.newMacAddresses, else emptied so a new one is made), the
// firmware's serial (spec.newSMBiosSerial, else empty) and UUID (empty: the new VM's is made
// from its name) replaced, the labels and annotations the filters leave out removed, then the
// clone's own patches, one operation each.
func targetPatches(vm *snapshotv1beta1.VirtualMachine, spec *clonev1beta1.VirtualMachineCloneSpec) ([]string, error) {
	var ops []patchOp
	if t := vm.Spec.Template; t != nil {
		for i, iface := range t.Spec.Domain.Devices.Interfaces {
			ops = append(ops, patchOp{Op: "replace", Path: fmt.Sprintf("/spec/template/spec/domain/devices/interfaces/%d/macAddress", i),
				Value: spec.NewMacAddresses[iface.Name]})
		}
		switch fw := t.Spec.Domain.Firmware; {
		case fw != nil:
			serial := ""
			if spec.NewSMBiosSerial != nil {
				serial = *spec.NewSMBiosSerial
			}
			ops = append(ops, patchOp{Op: "replace", Path: "/spec/template/spec/domain/firmware/serial", Value: serial})
		case spec.NewSMBiosSerial != nil:
			// KubeVirt ignores a new serial when the VM has no firmware section; Hangar gives
			// the target the serial it was asked for.
			ops = append(ops, patchOp{Op: "add", Path: "/spec/template/spec/domain/firmware",
				Value: map[string]string{"serial": *spec.NewSMBiosSerial}})
		}
		ops = append(ops, removals(t.ObjectMeta.Labels, spec.Template.LabelFilters, "/spec/template/metadata/labels", nil)...)
		ops = append(ops, removals(t.ObjectMeta.Annotations, spec.Template.AnnotationFilters, "/spec/template/metadata/annotations", nil)...)
		if t.Spec.Domain.Firmware != nil {
			ops = append(ops, patchOp{Op: "replace", Path: "/spec/template/spec/domain/firmware/uuid", Value: ""})
		}
	}
	ops = append(ops, removals(vm.Labels, spec.LabelFilters, "/metadata/labels", nil)...)
	ops = append(ops, removals(vm.Annotations, spec.AnnotationFilters, "/metadata/annotations", annotationsKept)...)

	patches := make([]string, 0, len(ops)+len(spec.Patches))
	for _, op := range ops {
		raw, err := json.Marshal(op)
		if err != nil {
			return nil, err
		}
		patches = append(patches, string(raw))
	}
	for i, p := range spec.Patches {
		split, err := splitPatch(p)
		if err != nil {
			return nil, fmt.Errorf("spec.patches[%d]: %w", i, err)
		}
		patches = append(patches, split...)
	}
	return patches, nil
}

// splitPatch turns one of a clone's patches, an operation or an array of them, into single
// operations, as a restore takes them.
func splitPatch(p string) ([]string, error) {
	trimmed := bytes.TrimSpace([]byte(p))
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return []string{string(trimmed)}, nil
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(trimmed, &ops); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, string(op))
	}
	return out, nil
}

// removals are the remove operations of the keys of m the filters do not keep, in key order.
func removals(m map[string]string, filters []string, base string, kept map[string]bool) []patchOp {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !kept[k] && !Keeps(filters, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	ops := make([]patchOp, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, patchOp{Op: "remove", Path: base + "/" + escapePointer(k)})
	}
	return ops
}

// Keeps says whether a clone with these label or annotation filters keeps key: no filter
// keeps everything; otherwise a key is kept when a filter matches it and no negated one
// ("!" first) does. A filter matches its key exactly, or every key it begins when it ends
// with "*" ("*" alone matches every key).
func Keeps(filters []string, key string) bool {
	if len(filters) == 0 {
		return true
	}
	kept := false
	for _, f := range filters {
		if !strings.HasPrefix(f, "!") && matches(f, key) {
			kept = true
		}
	}
	for _, f := range filters {
		if strings.HasPrefix(f, "!") && matches(f[1:], key) {
			return false
		}
	}
	return kept
}

func matches(filter, key string) bool {
	if prefix, ok := strings.CutSuffix(filter, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return filter == key
}

// escapePointer escapes a key for a JSON pointer (RFC 6901): "~" as "~0", "/" as "~1".
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
