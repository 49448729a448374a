// Command loop-provisioner provisions Block persistent volumes for the local cluster
// (hack/cluster), which local-path-provisioner cannot: each claim of its StorageClass gets a
// sparse file in its node's directory, attached to a loop device, offered as a local
// volume with volumeMode Block pinned to that node. It runs on the host (loop devices are the
// kernel's, shared by every node), built on the same library as local-path-provisioner
// (sigs.k8s.io/sig-storage-lib-external-provisioner). Its StorageClass must use
// volumeBindingMode WaitForFirstConsumer: the node is the scheduler's choice.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v10/controller"
)

// backingFileAnnotation records a volume's backing file on its PersistentVolume.
const backingFileAnnotation = "hangar.local/loop-backing-file"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	name := flag.String("provisioner", "hangar.local/loop-block", "provisioner name, as StorageClasses name it")
	dir := flag.String("dir", "", "directory holding one directory per node (<dir>/<node>/block/ keeps the volumes)")
	klog.InitFlags(nil)
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "loop-provisioner: -dir is required")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	p := &loopProvisioner{dir: *dir, client: client}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	// Loop devices do not survive the cluster's down (it detaches them): attach the volumes
	// again, at the device each PersistentVolume names.
	if err := p.reattach(ctx, *name); err != nil {
		klog.ErrorS(err, "reattaching volumes")
	}
	controller.NewProvisionController(klog.FromContext(ctx), client, *name, p, controller.LeaderElection(false)).Run(ctx)
}

type loopProvisioner struct {
	dir    string
	client kubernetes.Interface
}

var (
	_ controller.Provisioner      = &loopProvisioner{}
	_ controller.BlockProvisioner = &loopProvisioner{}
)

// SupportsBlock: the library provisions Block claims only for provisioners that say so.
func (p *loopProvisioner) SupportsBlock(context.Context) bool { return true }

// Provision makes a sparse file of the claim's size on its node and a Block volume of it.
func (p *loopProvisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	claim := opts.PVC
	if claim.Spec.VolumeMode == nil || *claim.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, errors.New("this class provisions Block volumes only (volumeMode: Block); use local-path for Filesystem")
	}
	if opts.SelectedNode == nil {
		return nil, controller.ProvisioningFinished, errors.New("no selected node: the StorageClass needs volumeBindingMode WaitForFirstConsumer")
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	node := opts.SelectedNode.Name
	if strings.ContainsAny(node, "/\x00") || node == "." || node == ".." {
		return nil, controller.ProvisioningFinished, fmt.Errorf("node name %q", node)
	}
	file := filepath.Join(p.dir, node, "block", opts.PVName+".img")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	err = f.Truncate(size.Value())
	f.Close()
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	dev, err := attach(file, "")
	if err != nil {
		os.Remove(file)
		return nil, controller.ProvisioningFinished, err
	}
	klog.InfoS("provisioned", "claim", klog.KObj(claim), "node", node, "device", dev, "size", size.String())
	block := corev1.PersistentVolumeBlock
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName, Annotations: map[string]string{backingFileAnnotation: file}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: *opts.StorageClass.ReclaimPolicy,
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    &block,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dev}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}, controller.ProvisioningFinished, nil
}

// Delete detaches the volume's loop device and removes its file.
func (p *loopProvisioner) Delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	file := pv.Annotations[backingFileAnnotation]
	if file == "" || !strings.HasPrefix(file, p.dir+"/") {
		return fmt.Errorf("volume %s has no backing file of ours", pv.Name)
	}
	if pv.Spec.Local != nil {
		if back, _ := backingFile(pv.Spec.Local.Path); back == file {
			if out, err := exec.CommandContext(ctx, "losetup", "-d", pv.Spec.Local.Path).CombinedOutput(); err != nil {
				return fmt.Errorf("losetup -d %s: %w: %s", pv.Spec.Local.Path, err, out)
			}
		}
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	klog.InfoS("deleted", "volume", pv.Name)
	return nil
}

// reattach attaches the backing file of every volume of ours at the device it names.
func (p *loopProvisioner) reattach(ctx context.Context, name string) error {
	pvs, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, pv := range pvs.Items {
		file := pv.Annotations[backingFileAnnotation]
		if pv.Annotations["pv.kubernetes.io/provisioned-by"] != name || file == "" || pv.Spec.Local == nil {
			continue
		}
		if back, _ := backingFile(pv.Spec.Local.Path); back == file {
			continue
		}
		if _, err := attach(file, pv.Spec.Local.Path); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", pv.Name, err))
		}
	}
	return errors.Join(errs...)
}

// attach attaches file to a loop device (dev, or the first free one) and returns its path.
func attach(file, dev string) (string, error) {
	args := []string{"--show", "--find", file}
	if dev != "" {
		args = []string{"--show", dev, file}
	}
	out, err := exec.Command("losetup", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// backingFile is the file a loop device is attached to, or "".
func backingFile(dev string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
