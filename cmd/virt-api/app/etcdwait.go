package app

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/klog/v2"
)

// etcdRetryInterval is the pause between two attempts to reach etcd at start.
const etcdRetryInterval = 2 * time.Second

// waitForEtcd returns once etcd answers a probe, or with ctx's error. k8s.io/apiserver gives
// up on an etcd it cannot reach within 20 s and virt-api would exit; the kubelet then
// restarts it with a growing back-off, so a virt-api started before its etcd (a fresh
// install, a drained etcd node) would come up minutes after etcd does. Waiting here, it comes
// up as soon as etcd does.
func waitForEtcd(ctx context.Context, config storagebackend.Config) error {
	attempt := 0
	return wait.PollUntilContextCancel(ctx, etcdRetryInterval, true, func(ctx context.Context) (bool, error) {
		attempt++
		err := probeEtcd(ctx, config)
		if err == nil {
			if attempt > 1 {
				klog.InfoS("etcd answers", "servers", config.Transport.ServerList, "attempts", attempt)
			}
			return true, nil
		}
		klog.InfoS("Waiting for etcd", "servers", config.Transport.ServerList, "attempt", attempt, "err", err)
		return false, nil
	})
}

// probeEtcd dials etcd as the storage will, with its TLS settings, and reads from it once.
func probeEtcd(ctx context.Context, config storagebackend.Config) error {
	prober, err := factory.CreateProber(config)
	if err != nil {
		return err
	}
	defer prober.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return prober.Probe(ctx)
}
