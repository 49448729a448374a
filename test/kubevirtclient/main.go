// Command kubevirtclient drives Hangar with KubeVirt's own Go client, kubevirt.io/client-go
// v1.6.0, the library KubeVirt's virtctl is built on: the calls `virtctl addvolume`,
// `removevolume`, `memory-dump get|remove` and `vmexport create|delete` make, in the order they
// make them, and the objects decoded with KubeVirt's own types. test/integration's TestKubeVirtClientGo builds and
// runs it against virt-api behind kube-apiserver; it exits non-zero with the first thing that
// is not as KubeVirt's client expects.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	v1 "kubevirt.io/api/core/v1"
	exportv1beta1 "kubevirt.io/api/export/v1beta1"
	"kubevirt.io/client-go/kubecli"
)

func main() {
	if err := run(context.Background(), os.Getenv("KUBECONFIG"), os.Getenv("HANGAR_NAMESPACE"), os.Getenv("HANGAR_VM")); err != nil {
		fmt.Fprintln(os.Stderr, "kubevirtclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns, name string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubecli.GetKubevirtClientFromRESTConfig(cfg)
	if err != nil {
		return err
	}
	vms, vmis := client.VirtualMachine(ns), client.VirtualMachineInstance(ns)

	// virtctl addvolume NAME --volume-name=hot (a claim: no DataVolume of that name).
	err = vmis.AddVolume(ctx, name, &v1.AddVolumeOptions{Name: "hot", Disk: &v1.Disk{Name: "hot", Serial: "hot",
		DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}},
		VolumeSource: &v1.HotplugVolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "hot"}, Hotpluggable: true}}})
	if err != nil {
		return fmt.Errorf("addvolume: %w", err)
	}
	vmi, err := vmis.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !hasVolume(vmi.Spec.Volumes, "hot", func(v v1.Volume) bool { return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable }) {
		return fmt.Errorf("after addvolume the instance has no hotpluggable volume hot: %+v", vmi.Spec.Volumes)
	}
	if err := vmis.RemoveVolume(ctx, name, &v1.RemoveVolumeOptions{Name: "hot"}); err != nil {
		return fmt.Errorf("removevolume: %w", err)
	}

	// virtctl memory-dump get NAME --claim-name=dump, then its wait for completion reads the
	// request from the VM's status.
	if err := vms.MemoryDump(ctx, name, &v1.VirtualMachineMemoryDumpRequest{ClaimName: "dump"}); err != nil {
		return fmt.Errorf("memorydump: %w", err)
	}
	vm, err := vms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	req := vm.Status.MemoryDumpRequest
	if req == nil || req.ClaimName != "dump" || req.Phase != v1.MemoryDumpAssociating {
		return fmt.Errorf("after memorydump the VM's request is %+v, not dump Associating", req)
	}
	vmi, err = vmis.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !hasVolume(vmi.Spec.Volumes, "dump", func(v v1.Volume) bool { return v.MemoryDump != nil && v.MemoryDump.ClaimName == "dump" }) {
		return fmt.Errorf("after memorydump the instance has no memory dump volume: %+v", vmi.Spec.Volumes)
	}
	if err := vms.MemoryDump(ctx, name, &v1.VirtualMachineMemoryDumpRequest{ClaimName: "dump"}); err == nil {
		return fmt.Errorf("a second memorydump while one is under way was accepted")
	}
	// virtctl memory-dump remove NAME.
	if err := vms.RemoveMemoryDump(ctx, name); err != nil {
		return fmt.Errorf("removememorydump: %w", err)
	}
	vm, err = vms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if req := vm.Status.MemoryDumpRequest; req == nil || !req.Remove || req.Phase != v1.MemoryDumpDissociating {
		return fmt.Errorf("after removememorydump the VM's request is %+v, not Dissociating", req)
	}

	// virtctl vmexport create NAME --pvc=dump --ttl=1h, then delete: KubeVirt's export types.
	exports := client.VirtualMachineExport(ns)
	export := &exportv1beta1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "dump-export"},
		Spec: exportv1beta1.VirtualMachineExportSpec{Source: k8sv1.TypedLocalObjectReference{APIGroup: &core, Kind: "PersistentVolumeClaim", Name: "dump"},
			TTLDuration: &metav1.Duration{Duration: time.Hour}}}
	if _, err := exports.Create(ctx, export, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("vmexport create: %w", err)
	}
	got, err := exports.Get(ctx, "dump-export", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("vmexport get: %w", err)
	}
	if got.Spec.Source.Name != "dump" || got.Spec.TTLDuration == nil || got.Spec.TTLDuration.Duration != time.Hour {
		return fmt.Errorf("the export read back is %+v", got.Spec)
	}
	if err := exports.Delete(ctx, "dump-export", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("vmexport delete: %w", err)
	}
	fmt.Printf("addvolume, removevolume, memorydump, removememorydump and vmexport create|delete answered as KubeVirt's client expects (%s)\n", time.Now().Format(time.RFC3339))
	return nil
}

// core is the core group's name, "", as virtctl sets it for a claim.
var core = ""

func hasVolume(volumes []v1.Volume, name string, ok func(v1.Volume) bool) bool {
	for _, v := range volumes {
		if v.Name == name && ok(v) {
			return true
		}
	}
	return false
}
