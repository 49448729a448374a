package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSelectWatches: a watch with a label selector sees only the pods it selects; one without
// sees every pod.
func TestSelectWatches(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	SelectWatches(kube)
	selected, err := kube.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{LabelSelector: "app=hot"})
	require.NoError(t, err)
	defer selected.Stop()
	all, err := kube.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer all.Stop()

	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "launcher", Namespace: "ns", Labels: map[string]string{"app": "launcher"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "attachment", Namespace: "ns", Labels: map[string]string{"app": "hot"}}},
	} {
		_, err := kube.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	next := func(w watch.Interface) string {
		select {
		case e := <-w.ResultChan():
			return e.Object.(*corev1.Pod).Name
		case <-time.After(5 * time.Second):
			return "nothing"
		}
	}
	assert.Equal(t, "attachment", next(selected))
	assert.Equal(t, "launcher", next(all))
	assert.Equal(t, "attachment", next(all))
}
