package v1_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// KubeVirt's Windows example (examples/vmi-windows.yaml), its domain as JSON: the features
// and timers it names without "enabled" or "present" are on after defaulting.
const windowsDomain = `{
  "clock": {"timer": {"hpet": {"present": false}, "hyperv": {}, "pit": {"tickPolicy": "delay"}, "rtc": {"tickPolicy": "catchup"}}, "utc": {}},
  "cpu": {"cores": 2},
  "devices": {"interfaces": [{"masquerade": {}, "model": "e1000", "name": "default"}], "tpm": {}, "inputs": [{"name": "tablet"}]},
  "features": {"acpi": {}, "apic": {}, "hyperv": {"relaxed": {}, "spinlocks": {"spinlocks": 8191}, "vapic": {}, "synictimer": {}, "evmcs": {}}, "smm": {}},
  "firmware": {"bootloader": {"efi": {"secureBoot": true}}, "uuid": "5d307ca9-b3ef-428c-8861-06e72d69f223"},
  "memory": {"guest": "2Gi"},
  "resources": {}
}`

func TestGuestHardwareDefaults(t *testing.T) {
	scheme := defaultedScheme(t)
	vmi := &v1.VirtualMachineInstance{}
	require.NoError(t, json.Unmarshal([]byte(windowsDomain), &vmi.Spec.Domain))
	scheme.Default(vmi)
	d := vmi.Spec.Domain

	f := d.Features
	assert.Equal(t, ptr.To(true), f.SMM.Enabled)
	assert.Equal(t, ptr.To(true), f.APIC.Enabled)
	h := f.Hyperv
	assert.Equal(t, ptr.To(true), h.Relaxed.Enabled)
	assert.Equal(t, ptr.To(true), h.VAPIC.Enabled)
	assert.Equal(t, ptr.To(true), h.Spinlocks.Enabled)
	assert.Equal(t, ptr.To[uint32](8191), h.Spinlocks.Spinlocks, "a given retry count is kept")
	// stimer needs synic, which needs vpindex; evmcs needs vapic and the vmx CPU feature.
	assert.Equal(t, ptr.To(true), h.Synictimer.Enabled)
	assert.Equal(t, ptr.To(true), h.Synic.Enabled)
	assert.Equal(t, ptr.To(true), h.Vpindex.Enabled)
	assert.Contains(t, d.CPU.Features, v1.CPUFeature{Name: "vmx", Policy: "require"})
	assert.Nil(t, h.Runtime, "an enlightenment nothing needs stays unset")

	tm := d.Clock.Timer
	assert.Equal(t, ptr.To(false), tm.HPET.Present, "a timer turned off stays off")
	assert.Equal(t, ptr.To(true), tm.Hyperv.Present)
	assert.Equal(t, ptr.To(true), tm.PIT.Present)
	assert.Equal(t, ptr.To(true), tm.RTC.Present)
	assert.NotNil(t, d.Clock.UTC)

	assert.Equal(t, []v1.Input{{Name: "tablet", Bus: v1.InputBusUSB, Type: v1.InputTypeTablet}}, d.Devices.Inputs)
	assert.Nil(t, d.Devices.TPM.Enabled, "tpm: {} stays as written; absent enabled means enabled, as KubeVirt reads it")
	assert.Nil(t, d.Firmware.Bootloader.EFI.Persistent)
}

func TestSpinlocksDefault(t *testing.T) {
	scheme := defaultedScheme(t)
	vmi := &v1.VirtualMachineInstance{}
	vmi.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Spinlocks: &v1.FeatureSpinlocks{}}}
	scheme.Default(vmi)
	assert.Equal(t, ptr.To(v1.DefaultSpinlocks), vmi.Spec.Domain.Features.Hyperv.Spinlocks.Spinlocks)

	vmi.Spec.Domain.Features.Hyperv.Spinlocks = &v1.FeatureSpinlocks{FeatureState: v1.FeatureState{Enabled: ptr.To(false)}}
	scheme.Default(vmi)
	assert.Nil(t, vmi.Spec.Domain.Features.Hyperv.Spinlocks.Spinlocks, "disabled spinlocks get no retry count")
}

func TestAutoattachInputDevice(t *testing.T) {
	scheme := defaultedScheme(t)
	vmi := &v1.VirtualMachineInstance{}
	vmi.Spec.Domain.Devices.AutoattachInputDevice = ptr.To(true)
	scheme.Default(vmi)
	assert.Equal(t, []v1.Input{{Name: "default-0", Bus: v1.InputBusUSB, Type: v1.InputTypeTablet}}, vmi.Spec.Domain.Devices.Inputs)

	given := &v1.VirtualMachineInstance{}
	given.Spec.Domain.Devices.AutoattachInputDevice = ptr.To(true)
	given.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "mine", Bus: v1.InputBusVirtio}}
	scheme.Default(given)
	assert.Equal(t, []v1.Input{{Name: "mine", Bus: v1.InputBusVirtio, Type: v1.InputTypeTablet}}, given.Spec.Domain.Devices.Inputs, "given inputs are kept, no tablet added")
}
