package cdi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

type served struct {
	ok  bool
	err error
}

func (s served) Served(context.Context) (bool, error) { return s.ok, s.err }

func TestRequireServedFor(t *testing.T) {
	containerDisk := kubevirt.Volume{Name: "root", VolumeSource: kubevirt.VolumeSource{ContainerDisk: &kubevirt.ContainerDiskSource{Image: "disk"}}}
	dataVolume := kubevirt.Volume{Name: "data", VolumeSource: kubevirt.VolumeSource{DataVolume: &kubevirt.DataVolumeSource{Name: "dv1"}}}
	tests := []struct {
		name    string
		served  Served // nil: standalone
		volumes []kubevirt.Volume
		check   func(error) bool // nil: allowed
		message string
	}{
		{name: "no DataVolumes need no CDI", volumes: []kubevirt.Volume{containerDisk}},
		{name: "served", served: served{ok: true}, volumes: []kubevirt.Volume{containerDisk, dataVolume}},
		{name: "not served", served: served{}, volumes: []kubevirt.Volume{containerDisk, dataVolume}, check: apierrors.IsInvalid,
			message: `spec.volumes[1].dataVolume.name: Invalid value: "dv1": DataVolumes need CDI (the Containerized Data Importer, cdi.kubevirt.io), which this cluster does not serve`},
		{name: "standalone", volumes: []kubevirt.Volume{dataVolume}, check: apierrors.IsInvalid,
			message: "this virt-api runs without a cluster"},
		{name: "discovery fails", served: served{err: errors.New("unreachable")}, volumes: []kubevirt.Volume{dataVolume},
			check: apierrors.IsInternalError, message: "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RequireServedFor(context.Background(), tt.served, kubevirt.Kind("VirtualMachineInstance"), "vmi1",
				tt.volumes, field.NewPath("spec", "volumes"))
			if tt.check == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, tt.check(err), "got %v", err)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}

func TestMakesDataVolumes(t *testing.T) {
	spec := func(templates []string, volumes ...kubevirt.VolumeSource) *kubevirt.VirtualMachineSpec {
		s := &kubevirt.VirtualMachineSpec{Template: &kubevirt.VirtualMachineInstanceTemplateSpec{}}
		for _, n := range templates {
			s.DataVolumeTemplates = append(s.DataVolumeTemplates, kubevirt.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		for i, v := range volumes {
			s.Template.Spec.Volumes = append(s.Template.Spec.Volumes, kubevirt.Volume{Name: fmt.Sprint("v", i), VolumeSource: v})
		}
		return s
	}
	dv := func(name string) kubevirt.VolumeSource {
		return kubevirt.VolumeSource{DataVolume: &kubevirt.DataVolumeSource{Name: name}}
	}
	assert.True(t, MakesDataVolumes(spec([]string{"root"}, dv("root"))))
	assert.False(t, MakesDataVolumes(spec(nil, dv("made-elsewhere"))), "a DataVolume without a template is not made")
	assert.False(t, MakesDataVolumes(spec([]string{"unused"}, dv("other"))), "a template no volume names is not used")
	assert.False(t, MakesDataVolumes(nil))
	assert.False(t, MakesDataVolumes(&kubevirt.VirtualMachineSpec{}))
}
