// Package leaderelect runs a component's work only while its replica holds a Lease, as kube's
// controllers do: virt-controller's controllers and hangar-operator's reconciler.
package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection" // leader_election_master_status
	"k8s.io/klog/v2"
)

// Config is an election: a Lease in Namespace named Name, held by Identity.
type Config struct {
	Namespace, Name, Identity string
	// LeaseDuration is how long followers wait after the last renewal before taking over;
	// RenewDeadline how long the leader keeps trying to renew before it gives up; RetryPeriod
	// how often both try. kube-controller-manager's defaults are 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Healthz, when set, fails once the leader has missed renewals (see
	// leaderelection.NewLeaderHealthzAdaptor): a stuck leader gets restarted.
	Healthz *leaderelection.HealthzAdaptor
}

// Defaults is kube-controller-manager's timing for the Lease namespace/name.
func Defaults(namespace, name, identity string) Config {
	return Config{Namespace: namespace, Name: name, Identity: identity,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// ErrLostLeadership is what Run returns when another replica took the Lease over while
// this one was leading: the process should exit, as kube's controllers do, rather than risk
// two leaders acting on the same objects.
var ErrLostLeadership = errors.New("lost leadership")

// Run waits until this replica holds the Lease, then runs work until ctx ends or the Lease is
// lost. It returns once work has returned, and releases the Lease only then: a follower takes
// over within RetryPeriod instead of LeaseDuration, and never while this replica still writes.
func Run(ctx context.Context, kube kubernetes.Interface, le Config, work func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	// The elector calls OnStartedLeading in a goroutine of its own; the work runs here
	// instead, so that its end is known.
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.Name,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        le.Healthz,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { leading <- ctx },
			OnStoppedLeading: func() {},
			OnNewLeader: func(leader string) {
				if leader != le.Identity {
					klog.InfoS("Following leader", "lease", klog.KRef(le.Namespace, le.Name), "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	// The elector outlives ctx until the work is done: cancelling it releases the Lease.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electorCtx) // returns when stopped or when a renewal fails
	}()

	select {
	case <-ctx.Done():
		stopElector()
		<-electorDone
		return nil
	case <-electorDone:
		return ErrLostLeadership // not reached: Run returns only once stopped or after leading
	case leaderCtx := <-leading:
		klog.InfoS("Became leader", "lease", klog.KRef(le.Namespace, le.Name), "identity", le.Identity)
		// The work stops when ctx ends or when the Lease is lost (leaderCtx ends).
		runCtx, cancelRun := context.WithCancel(leaderCtx)
		defer context.AfterFunc(ctx, cancelRun)()
		runErr := work(runCtx)
		cancelRun()
		stopElector()
		<-electorDone
		switch {
		case runErr != nil:
			return runErr
		case ctx.Err() == nil:
			return ErrLostLeadership
		}
		klog.InfoS("Stopped leading, Lease released", "lease", klog.KRef(le.Namespace, le.Name), "identity", le.Identity)
		return nil
	}
}
