package virtualmachineinstance

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
)

// Volumes serves virtualmachineinstances/addvolume and removevolume (docs/hotplug.md): they
// add a hotplugged volume and its disk to a running instance's spec, or take one out, as an
// update of the instance that runs virt-api's admission chain; virt-controller and the node
// agent bring the claim to the guest. Nothing else may change an instance's volumes.
type Volumes struct {
	vmis      *REST
	admission *action.Admission
	cdi       cdi.Served // nil: no cluster, no DataVolumes
	// claims reads a claim of the cluster; nil: no cluster, nothing checked.
	claims ClaimGetter
}

// ClaimGetter reads a claim from kube-apiserver (NotFound when there is none).
type ClaimGetter func(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)

// NewVolumes returns the hotplug actions of vmis, whose writes run admission; claims (nil
// without a cluster) refuses a claim that does not exist, or that another instance uses, at
// once, rather than leaving the volume Pending.
func NewVolumes(vmis *REST, admission *action.Admission, served cdi.Served, claims ClaimGetter) *Volumes {
	return &Volumes{vmis: vmis, admission: admission, cdi: served, claims: claims}
}

var vmiTarget = action.Target{Resource: v1.SchemeGroupVersion.WithResource("virtualmachineinstances"),
	Kind: v1.SchemeGroupVersion.WithKind("VirtualMachineInstance")}

// Add serves virtualmachineinstances/addvolume.
func (v *Volumes) Add(ctx context.Context, name string, body action.Body) error {
	opts := v1.AddVolumeOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	volume, disk, err := v.Prepare(ctx, kubevirt.Kind("VirtualMachineInstance"), name, &opts)
	if err != nil {
		return err
	}
	// Listed from the start: removevolume tells a volume hotplugged a moment ago, before
	// virt-controller made its pod, from one the instance started with (LiveHotplugged).
	pending := kubevirt.VolumeStatus{Name: volume.Name, Phase: kubevirt.VolumePending, Reason: v1.VolumeReasonAttachmentPodPending,
		Message: "waiting for the attachment pod to be created"}
	return v.update(withVolumeStatus(ctx, pending), name, opts.DryRun, func(vmi *kubevirt.VirtualMachineInstance) error {
		if err := running(vmi); err != nil {
			return err
		}
		for _, existing := range vmi.Spec.Volumes {
			if existing.Name == volume.Name {
				return invalid(name, field.Duplicate(field.NewPath("name"), volume.Name))
			}
			if claim := claimOf(&existing); claim != "" && claim == claimOf(volume) {
				return invalid(name, field.Invalid(field.NewPath("volumeSource"), claim,
					fmt.Sprintf("the instance has this claim already, as volume %s", existing.Name)))
			}
		}
		for _, existing := range vmi.Spec.Domain.Devices.Disks {
			if existing.Name == volume.Name {
				return invalid(name, field.Duplicate(field.NewPath("name"), volume.Name))
			}
		}
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, *volume)
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, *disk)
		return nil
	})
}

// Remove serves virtualmachineinstances/removevolume: only a hotplugged volume may go.
func (v *Volumes) Remove(ctx context.Context, name string, body action.Body) error {
	opts := v1.RemoveVolumeOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	if opts.Name == "" {
		return invalid(name, field.Required(field.NewPath("name"), "the volume to remove"))
	}
	return v.update(ctx, name, opts.DryRun, func(vmi *kubevirt.VirtualMachineInstance) error {
		if err := running(vmi); err != nil {
			return err
		}
		for i := range vmi.Spec.Volumes {
			if vol := &vmi.Spec.Volumes[i]; vol.Name == opts.Name {
				if vol.MemoryDump != nil {
					return invalid(name, field.Invalid(field.NewPath("name"), opts.Name, "a memory dump's volume goes with the VM's removememorydump"))
				}
				if !validation.Hotplugged(vol) {
					return invalid(name, field.Invalid(field.NewPath("name"), opts.Name, "only a hotplugged volume can be removed from a running instance"))
				}
				if !LiveHotplugged(vmi, opts.Name) {
					return conflict(name, "the instance started with volume %s (its launcher pod has the claim): it leaves when the instance restarts", opts.Name)
				}
				vmi.Spec.Volumes = append(vmi.Spec.Volumes[:i], vmi.Spec.Volumes[i+1:]...)
				for j, d := range vmi.Spec.Domain.Devices.Disks {
					if d.Name == opts.Name {
						vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks[:j], vmi.Spec.Domain.Devices.Disks[j+1:]...)
						break
					}
				}
				return nil
			}
		}
		return invalid(name, field.NotFound(field.NewPath("name"), opts.Name))
	})
}

// Prepare checks opts, sent to the addvolume of the object kind/name (an instance, or a VM for
// its template), and makes the volume and disk it asks for: a claim or DataVolume marked
// hotpluggable, on a SCSI disk whose serial defaults to the volume's name.
func (v *Volumes) Prepare(ctx context.Context, kind schema.GroupKind, name string, opts *v1.AddVolumeOptions) (*kubevirt.Volume, *kubevirt.Disk, error) {
	var errs field.ErrorList
	if msgs := utilvalidation.IsDNS1123Label(opts.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("name"), opts.Name, msgs[0]))
	}
	source := field.NewPath("volumeSource")
	src := opts.VolumeSource
	switch {
	case src == nil || (src.PersistentVolumeClaim == nil && src.DataVolume == nil):
		errs = append(errs, field.Required(source, "a persistentVolumeClaim or a dataVolume"))
	case src.PersistentVolumeClaim != nil && src.DataVolume != nil:
		errs = append(errs, field.Invalid(source, "persistentVolumeClaim, dataVolume", "one of persistentVolumeClaim and dataVolume"))
	case src.PersistentVolumeClaim != nil && src.PersistentVolumeClaim.ClaimName == "":
		errs = append(errs, field.Required(source.Child("persistentVolumeClaim", "claimName"), ""))
	case src.DataVolume != nil && src.DataVolume.Name == "":
		errs = append(errs, field.Required(source.Child("dataVolume", "name"), ""))
	}
	diskPath := field.NewPath("disk")
	switch d := opts.Disk; {
	case d == nil:
		errs = append(errs, field.Required(diskPath, "a disk on the scsi bus"))
	case d.CDRom != nil:
		errs = append(errs, field.Invalid(diskPath.Child("cdrom"), "cdrom", "a CD-ROM cannot be hotplugged"))
	case d.Disk != nil && d.Disk.Bus != "" && d.Disk.Bus != v1.DiskBusSCSI:
		errs = append(errs, field.NotSupported(diskPath.Child("disk", "bus"), d.Disk.Bus, []string{string(v1.DiskBusSCSI)}))
	}
	if len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(kind, name, errs)
	}
	in := v1.Volume{Name: opts.Name}
	if src.PersistentVolumeClaim != nil {
		claimPath := source.Child("persistentVolumeClaim", "claimName")
		if _, err := v.CheckClaim(ctx, kind, name, claimPath, src.PersistentVolumeClaim.ClaimName, false); err != nil {
			return nil, nil, err
		}
	}
	if src.PersistentVolumeClaim != nil {
		pvc := *src.PersistentVolumeClaim
		pvc.Hotpluggable = true
		in.PersistentVolumeClaim = &pvc
	} else {
		if err := cdi.RequireServed(ctx, v.cdi, kind, name, source.Child("dataVolume", "name"), src.DataVolume.Name); err != nil {
			return nil, nil, err
		}
		dv := *src.DataVolume
		dv.Hotpluggable = true
		in.DataVolume = &dv
	}
	d := opts.Disk.DeepCopy()
	d.Name = opts.Name
	if d.Disk == nil {
		d.Disk = &v1.DiskTarget{}
	}
	d.Disk.Bus = v1.DiskBusSCSI
	if d.Serial == "" {
		d.Serial = opts.Name // as KubeVirt's virtctl sets it: the guest finds the disk by it
	}
	volume, disk := &kubevirt.Volume{}, &kubevirt.Disk{}
	if err := v1.Convert_v1_Volume_To_kubevirt_Volume(&in, volume, nil); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	if err := v1.Convert_v1_Disk_To_kubevirt_Disk(d, disk, nil); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return volume, disk, nil
}

// CheckClaim refuses, for the action on kind/name, a claim (named at path) that does not
// exist, or one that a live instance other than name
// uses (dumping: any instance), unless the claim may be written from many nodes: two guests
// writing one disk corrupt it. It returns the claim it read; without a cluster nothing is
// checked, and the claim is nil.
func (v *Volumes) CheckClaim(ctx context.Context, kind schema.GroupKind, name string, path *field.Path, claimName string, dumping bool) (*corev1.PersistentVolumeClaim, error) {
	if v.claims == nil {
		return nil, nil
	}
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	claim, err := v.claims(ctx, ns, claimName)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewInvalid(kind, name, field.ErrorList{field.NotFound(path, claimName)})
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("look up claim %s/%s: %w", ns, claimName, err))
	}
	if slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteMany) && !dumping {
		return claim, nil
	}
	list, err := v.vmis.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, vmi := range list.(*kubevirt.VirtualMachineInstanceList).Items {
		if (vmi.Name == name && !dumping) || vmi.IsFinal() {
			continue
		}
		for i := range vmi.Spec.Volumes {
			if vol := &vmi.Spec.Volumes[i]; claimOf(vol) == claimName && vol.MemoryDump == nil {
				return nil, apierrors.NewInvalid(kind, name, field.ErrorList{field.Invalid(path, claimName,
					fmt.Sprintf("instance %s uses this claim (volume %s)", vmi.Name, vol.Name))})
			}
		}
	}
	return claim, nil
}

// update changes the instance's spec by change, decided on the freshest instance inside the
// store's compare-and-swap, through admission as the update it is.
func (v *Volumes) update(ctx context.Context, name string, dryRun []string, change func(*kubevirt.VirtualMachineInstance) error) error {
	options := &metav1.UpdateOptions{}
	if action.IsDryRun(dryRun) {
		options.DryRun = []string{metav1.DryRunAll}
	}
	target := vmiTarget
	target.Name = name
	updated, validate := v.admission.Update(ctx, target, options, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		vmi := old.(*kubevirt.VirtualMachineInstance).DeepCopy()
		if err := change(vmi); err != nil {
			return nil, err
		}
		return vmi, nil
	})
	_, _, err := v.vmis.Update(withHotplug(ctx), name, updated, rest.ValidateAllObjectFunc, validate, false, options)
	return err
}

// running refuses an instance that is not running: volumes are hotplugged into a guest.
func running(vmi *kubevirt.VirtualMachineInstance) error {
	if vmi.Status.Phase != kubevirt.Running {
		return conflict(vmi.Name, "the instance is not running (phase %q): volumes are hotplugged into a running guest", vmi.Status.Phase)
	}
	return nil
}

// claimOf is the claim a volume uses: a claim's, a DataVolume's (which has its name), or a
// memory dump's.
func claimOf(v *kubevirt.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	case v.MemoryDump != nil:
		return v.MemoryDump.ClaimName
	}
	return ""
}

func invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(kubevirt.Kind("VirtualMachineInstance"), name, errs)
}

// LiveHotplugged says whether volume came into the running instance by hotplug (addvolume
// listed it in the status, and an attachment pod brings it), rather than with the instance's
// start (its launcher pod has the claim; the status never lists it).
func LiveHotplugged(vmi *kubevirt.VirtualMachineInstance, volume string) bool {
	for _, s := range vmi.Status.VolumeStatus {
		if s.Name == volume {
			return true
		}
	}
	return false
}
