package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
)

// claimExists reads a claim from kube-apiserver. The state claim check asks only when a write
// newly asks for persistent state and its user may not create claims, so no informer (and
// no cache of every claim in the cluster) is kept for it.
func claimExists(kube kubernetes.Interface) virtualmachine.ClaimExists {
	return func(ctx context.Context, namespace, name string) (bool, error) {
		_, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
}

// claimGetter reads a claim from kube-apiserver, for the VMs that infer their instance type and
// preference from its labels (asked only for a VM written with inferFromVolume, after the
// user's own right to read the claim is checked).
func claimGetter(kube kubernetes.Interface) virtualmachine.ClaimGetter {
	return func(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
		return kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}
