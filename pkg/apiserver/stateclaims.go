package apiserver

import (
	"context"

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
