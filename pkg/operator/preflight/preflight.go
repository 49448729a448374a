// Package preflight refuses, with a reason a person can act on, to install Hangar where it
// cannot work: KubeVirt still installed (its CustomResourceDefinitions or APIServices would
// fight Hangar's for kubevirt.io), no StorageClass for etcd's volumes, or no node that offers
// /dev/kvm while guests may not run under emulation.
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Reasons of the Degraded condition when a check refuses.
const (
	ReasonKubeVirtInstalled = "KubeVirtInstalled"
	ReasonAPIServiceTaken   = "APIServiceOwnedElsewhere"
	ReasonNoStorageClass    = "NoStorageClass"
	ReasonNoKVM             = "NoKVM"
)

// Failure is a refused check: the reason (a CamelCase word for the condition) and the message.
type Failure struct {
	Reason, Message string
}

func (f *Failure) Error() string { return f.Message }

// kubevirtGroups are the groups whose CustomResourceDefinitions mean KubeVirt is installed.
var kubevirtGroups = map[string]bool{"kubevirt.io": true, "subresources.kubevirt.io": true, "instancetype.kubevirt.io": true, "snapshot.kubevirt.io": true, "clone.kubevirt.io": true, "export.kubevirt.io": true}

// APIServices are the APIServices Hangar registers; an existing one must be Hangar's own.
var APIServices = []string{"v1.kubevirt.io", "v1alpha3.kubevirt.io", "v1.subresources.kubevirt.io", "v1beta1.instancetype.kubevirt.io", "v1beta1.snapshot.kubevirt.io", "v1beta1.clone.kubevirt.io", "v1beta1.export.kubevirt.io"}

// Clients are what the checks read.
type Clients struct {
	Kube          kubernetes.Interface
	APIExtensions apiextensionsclient.Interface
	Aggregator    aggregatorclient.Interface
}

// Install checks what must hold before anything is deployed. ours says whether an
// APIService is Hangar's (the operator's label).
func Install(ctx context.Context, c Clients, spec operatorv1alpha1.HangarSpec, ours func(*apiregistrationv1.APIService) bool) error {
	crds, err := c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list CustomResourceDefinitions: %w", err)
	}
	var kubevirt []string
	for _, crd := range crds.Items {
		if kubevirtGroups[crd.Spec.Group] {
			kubevirt = append(kubevirt, crd.Name)
		}
	}
	if len(kubevirt) > 0 {
		sort.Strings(kubevirt)
		return &Failure{ReasonKubeVirtInstalled, fmt.Sprintf("KubeVirt's CustomResourceDefinitions are installed (%s): "+
			"kube-apiserver would serve kubevirt.io from them instead of Hangar. Uninstall KubeVirt first", strings.Join(kubevirt, ", "))}
	}
	for _, name := range APIServices {
		svc, err := c.Aggregator.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get APIService %s: %w", name, err)
		}
		if !ours(svc) {
			to := "kube-apiserver itself"
			if svc.Spec.Service != nil {
				to = "Service " + svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name
			}
			return &Failure{ReasonAPIServiceTaken, fmt.Sprintf("the APIService %s exists and is not Hangar's (it points at %s): "+
				"remove whatever installed it (KubeVirt?) first", name, to)}
		}
	}
	return storageClass(ctx, c.Kube, spec.Etcd.StorageClassName)
}

// storageClass checks that etcd's volumes can be provisioned: the named class, or a default.
func storageClass(ctx context.Context, kube kubernetes.Interface, name *string) error {
	if name != nil {
		_, err := kube.StorageV1().StorageClasses().Get(ctx, *name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return &Failure{ReasonNoStorageClass, fmt.Sprintf("spec.etcd.storageClassName: the StorageClass %s does not exist", *name)}
		}
		return err
	}
	classes, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list StorageClasses: %w", err)
	}
	for _, sc := range classes.Items {
		if isDefault(&sc) {
			return nil
		}
	}
	return &Failure{ReasonNoStorageClass, "the cluster has no default StorageClass for etcd's volumes: " +
		"mark one default or name one in spec.etcd.storageClassName"}
}

func isDefault(sc *storagev1.StorageClass) bool {
	return sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" ||
		sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
}

// KVM checks, once virt-handler runs, that a guest can run somewhere: under emulation
// anywhere, otherwise only on a node whose handler offers /dev/kvm.
func KVM(nodes []*corev1.Node, spec operatorv1alpha1.HangarSpec) error {
	if d := spec.Configuration.DeveloperConfiguration; d != nil && d.UseEmulation {
		return nil
	}
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[layout.KVMResource]; ok && q.Sign() > 0 {
			return nil
		}
	}
	return &Failure{ReasonNoKVM, "no node offers /dev/kvm (" + layout.KVMResource + "): guests cannot run. " +
		"On hosts without usable KVM set spec.configuration.developerConfiguration.useEmulation to run them under QEMU's TCG"}
}
