package app

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// pollInterval is how often Uninstall looks whether the object is gone.
const pollInterval = 2 * time.Second

// Uninstall deletes the Hangar object and waits until it is gone, that is until the operator
// has removed Hangar (its finalizer). It reports the object's Degraded condition meanwhile,
// which says what the removal waits for (VMs that still exist, say).
func Uninstall(ctx context.Context, kubeconfig string, timeout time.Duration) error {
	clients, err := newClients(kubeconfig)
	if err != nil {
		return err
	}
	hangars := clients.Operator.HangarvmV1alpha1().Hangars()
	if err := hangars.Delete(ctx, operatorv1alpha1.Name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	said := ""
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		h, err := hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil // a transient error; the timeout bounds the wait
		}
		for _, c := range h.Status.Conditions {
			if c.Type == operatorv1alpha1.ConditionDegraded && c.Status == metav1.ConditionTrue && c.Message != said {
				said = c.Message
				klog.InfoS("Removal waits", "reason", c.Reason, "message", c.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("Hangar was not removed within %s: %s", timeout, said)
	}
	klog.InfoS("Hangar removed")
	return nil
}
