package handler

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// A live migration as the two handlers see it. virt-controller owns status.migrationState's
// identity (migration uid, source and target node and pod, the target's address) and the
// hand-off; the source handler, which owns the instance's status until then, writes the
// progress its launcher reports. The target handler writes nothing: it watches the
// instances whose status.migrationState.targetNode is its node (TargetNodeField), prepares
// the target launcher (pod network, then an incoming domain) and admits the source's
// streams for it (migration_proxy.go).

// TargetNodeField selects the instances migrating to a node.
const TargetNodeField = "status.migrationState.targetNode"

// migrationTarget is an instance migrating to this node.
type migrationTarget struct {
	vmiUID   types.UID
	state    *v1.VirtualMachineInstanceMigrationState
	launcher *launcher // the target pod's, once its socket directory exists
	prepared string    // migration uid the launcher was prepared for
}

// syncTarget prepares this node's end of an instance's migration.
func (c *Controller) syncTarget(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	vmi, err := c.targetLister.VirtualMachineInstances(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.dropTarget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ms := vmi.Status.MigrationState
	if ms == nil || ms.TargetNode != c.cfg.NodeName || vmi.Status.NodeName == c.cfg.NodeName {
		// Not (or no longer) coming here; after the hand-off the instance is the main
		// controller's, launcher and all.
		c.dropTarget(key)
		return 0, nil
	}
	c.mu.Lock()
	t := c.targets[key]
	var earlier *launcher
	if t == nil || t.vmiUID != vmi.UID || t.state.MigrationUid != ms.MigrationUid {
		// Each migration has a target pod of its own: nothing of an earlier one's is reused.
		if t != nil {
			earlier = t.launcher
		}
		t = &migrationTarget{vmiUID: vmi.UID}
		c.targets[key] = t
	}
	t.state = ms.DeepCopy()
	l := t.launcher
	prepared := t.prepared
	c.mu.Unlock()
	if earlier != nil {
		earlier.stop()
	}
	if ms.Completed || ms.Failed || ms.AbortRequested || ms.MigrationUid == "" {
		return 0, nil
	}
	if l == nil {
		podUID, err := c.sockets.PodUID(vmi)
		if err != nil {
			return launcherSocketRecheck, nil // the target pod is not here yet
		}
		dir, err := c.sockets.Pods.Dir(podUID, layout.SocketVolume)
		if err != nil {
			return launcherSocketRecheck, nil
		}
		l = newLauncher(key, vmi.UID, dir, c.cfg.Calls)
		c.mu.Lock()
		t.launcher = l
		c.mu.Unlock()
	}
	if !l.socketPresent() {
		return c.awaitSocket(l, func() { c.targetQueue.Add(key) }), nil
	}
	uid := string(ms.MigrationUid)
	if prepared == uid {
		return 0, nil
	}
	st, err := l.client.State(ctx)
	if err == nil {
		err = checkState(st, vmi.UID)
	}
	if err != nil {
		return 0, fmt.Errorf("target launcher: %w", err)
	}
	switch {
	case st.Phase == api.PhaseIncoming && st.Migration != nil && st.Migration.UID == uid:
		// Prepared before this handler restarted.
	case st.Phase == "":
		if c.cfg.SetupNetwork && len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
			if err := c.setupNetwork(ctx, vmi, l); err != nil {
				return 0, fmt.Errorf("target pod network: %w", err)
			}
		}
		if _, err := l.client.PrepareMigrationTarget(ctx, api.MigrationTargetRequest{VMI: vmi, UID: uid, QEMUCapabilities: c.cfg.QEMUCapabilities}); err != nil {
			return 0, fmt.Errorf("prepare migration target: %w", err)
		}
		klog.InfoS("migration target prepared", "vmi", key, "migration", uid)
	default:
		return 0, fmt.Errorf("target launcher is %s, not ready for migration %s", st.Phase, uid)
	}
	c.mu.Lock()
	t.prepared = uid
	c.mu.Unlock()
	return 0, nil
}

// dropTarget forgets the target of key, closing its launcher's connection and socket
// directory.
func (c *Controller) dropTarget(key string) {
	c.mu.Lock()
	t := c.targets[key]
	delete(c.targets, key)
	c.mu.Unlock()
	if t != nil && t.launcher != nil {
		t.launcher.stop()
	}
}

// outgoingRecheck is how often a source looks whether its target is ready.
const outgoingRecheck = time.Second

// syncOutgoing drives the migration out of this node's launcher l: once the target is
// ready, the launcher migrates through the streams this handler carries; a requested abort
// goes to the launcher; a finished migration's streams stop.
func (c *Controller) syncOutgoing(ctx context.Context, key string, vmi *v1.VirtualMachineInstance, l *launcher) (time.Duration, error) {
	ms := vmi.Status.MigrationState
	active := ms != nil && ms.SourceNode == c.cfg.NodeName && ms.MigrationUid != "" &&
		!ms.Completed && !ms.Failed && vmi.DeletionTimestamp == nil
	c.mu.Lock()
	o := c.outgoing[key]
	c.mu.Unlock()
	if !active || (o != nil && o.uid != string(ms.MigrationUid)) {
		if o != nil {
			c.stopOutgoing(key)
		}
		if !active {
			return 0, nil
		}
		o = nil
	}
	uid := string(ms.MigrationUid)
	st := l.State()
	mine := st.Migration != nil && st.Migration.UID == uid && st.Migration.Role == api.MigrationSource
	if ms.AbortRequested {
		if mine && st.Migration.EndedAt == nil && st.Migration.AbortStatus == "" {
			if _, err := l.client.AbortMigration(ctx, uid); err != nil {
				return 0, fmt.Errorf("abort migration: %w", err)
			}
		}
		if !mine {
			// Never started here: nothing to abort; the status says so (nextStatus).
			return 0, nil
		}
	}
	if ms.TargetNode == "" || ms.TargetNodeAddress == "" {
		return 0, nil // virt-controller has not placed the target yet
	}
	if o == nil {
		o = c.startOutgoing(vmi, l, ms)
		c.mu.Lock()
		c.outgoing[key] = o
		c.mu.Unlock()
	}
	if mine || o.started || ms.AbortRequested {
		return 0, nil
	}
	if st.Phase != api.PhaseRunning {
		return outgoingRecheck, nil // paused or starting: KubeVirt migrates running guests only
	}
	if err := c.probeTarget(ctx, vmi, ms); err != nil {
		klog.V(2).InfoS("migration target not ready", "vmi", key, "err", err)
		return outgoingRecheck, nil
	}
	if _, err := l.client.Migrate(ctx, api.MigrateRequest{UID: uid, Options: migrationOptions(ms.MigrationConfiguration)}); err != nil {
		return 0, fmt.Errorf("start migration: %w", err)
	}
	o.started = true
	klog.InfoS("migration started", "vmi", key, "migration", uid, "target", ms.TargetNode)
	return 0, nil
}

func (c *Controller) stopOutgoing(key string) {
	c.mu.Lock()
	o := c.outgoing[key]
	delete(c.outgoing, key)
	c.mu.Unlock()
	if o != nil {
		o.cancel()
	}
}

// migrationOptions are the launcher's options from the configuration virt-controller put in
// the migration's state (KubeVirt's defaults where it says nothing).
func migrationOptions(mc *v1.MigrationConfiguration) api.MigrationOptions {
	o := api.MigrationOptions{ProgressTimeoutSeconds: 150, CompletionTimeoutPerGiBSeconds: 150}
	if mc == nil {
		return o
	}
	if mc.BandwidthPerMigration != nil {
		if b := mc.BandwidthPerMigration.Value(); b > 0 {
			o.BandwidthMiB = uint64(max(b>>20, 1))
		}
	}
	if mc.ProgressTimeout != nil {
		o.ProgressTimeoutSeconds = *mc.ProgressTimeout
	}
	if mc.CompletionTimeoutPerGiB != nil {
		o.CompletionTimeoutPerGiBSeconds = *mc.CompletionTimeoutPerGiB
	}
	o.AllowAutoConverge = mc.AllowAutoConverge != nil && *mc.AllowAutoConverge
	o.AllowPostCopy = mc.AllowPostCopy != nil && *mc.AllowPostCopy
	return o
}
