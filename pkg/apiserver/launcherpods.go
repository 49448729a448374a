package apiserver

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// launcherPods deletes launcher pods through kube-apiserver, for forced restarts.
type launcherPods struct {
	kube kubernetes.Interface
}

func (p launcherPods) DeleteLauncherPods(ctx context.Context, namespace string, vmiUID types.UID, gracePeriodSeconds int64) error {
	selector := labels.Set{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(vmiUID)}.AsSelector().String()
	err := p.kube.CoreV1().Pods(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: &gracePeriodSeconds},
		metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("delete launcher pods of instance %s: %w", vmiUID, err)
	}
	return nil
}
