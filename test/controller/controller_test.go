//go:build kube

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/replicaset"
	vmicontroller "github.com/hangarvm/hangar/pkg/controller/vmi"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Run with `go test -tags kube ./test/controller/` (hack/cluster/build.sh builds kube-apiserver).

const wait = 60 * time.Second

// TestController runs the controllers against kube-apiserver as the virt-controller
// ServiceAccount, with the RBAC of artifacts/install/rbac/virt-controller.yaml: every call they make must be
// allowed by it, through kube-apiserver and, for kubevirt.io, through virt-api's delegated
// authorization.
func TestController(t *testing.T) {
	c := startCluster(t)
	c.playKubelet()
	ctx := context.Background()

	t.Run("a VM starts, is scheduled, runs and stops", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("lifecycle")
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("web", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)

		var first *v1.VirtualMachineInstance
		var pod corev1.Pod
		waitFor(t, wait, "a Scheduling instance with one launcher pod", func() (bool, error) {
			vmi, err := c.vmi(ns, "web")
			if err != nil {
				return false, nil
			}
			pods := c.launcherPods(ns)[string(vmi.UID)]
			if vmi.Status.Phase != v1.Scheduling || len(pods) != 1 {
				return false, nil
			}
			first, pod = vmi, pods[0]
			return true, nil
		})
		vm := c.vm(ns, "web")
		assert.Equal(t, vm.UID, metav1.GetControllerOf(first).UID, "the VM controls its instance")
		assert.Contains(t, first.Finalizers, vmicontroller.Finalizer)

		assert.Equal(t, "virt-launcher-web-", pod.GenerateName)
		assert.Equal(t, first.UID, metav1.GetControllerOf(&pod).UID, "the instance controls its pod")
		assert.Equal(t, "web", pod.Labels["vm"], "the template's labels reach the pod")
		assert.Equal(t, corev1.PodPending, pod.Status.Phase, "no scheduler here")
		compute := pod.Spec.Containers[0]
		assert.Equal(t, testLauncherImage, compute.Image, "the image of the ConfigMap")
		assert.NotContains(t, compute.Resources.Requests, layout.KVMResource, "useEmulation: no /dev/kvm")
		assert.Contains(t, compute.Env, corev1.EnvVar{Name: layout.EnvEmulation, Value: "true"})

		waitFor(t, wait, "printableStatus Starting", func() (bool, error) {
			return c.vm(ns, "web").Status.PrintableStatus == v1.VirtualMachineStatusStarting, nil
		})
		out, err := c.Kubectl("get", "vm", "web", "-n", ns)
		require.NoError(t, err, out)
		assert.Contains(t, out, "Starting")

		c.bindPod(&pod, "node-a")
		waitFor(t, wait, "Scheduled on node-a", func() (bool, error) {
			vmi, err := c.vmi(ns, "web")
			return err == nil && vmi.Status.Phase == v1.Scheduled && vmi.Status.NodeName == "node-a", nil
		})
		c.setPhase(ns, "web", v1.Running)
		waitFor(t, wait, "printableStatus Running", func() (bool, error) {
			return c.vm(ns, "web").Status.PrintableStatus == v1.VirtualMachineStatusRunning, nil
		})

		t.Run("events are in kube-apiserver", func(t *testing.T) {
			c := c.with(t)
			reasons := func(kind, name string) []string {
				var out []string
				for _, e := range c.events(ns, kind, name) {
					assert.Equal(t, "virt-controller", e.Source.Component)
					out = append(out, e.Reason)
				}
				return out
			}
			waitFor(t, wait, "events", func() (bool, error) {
				return len(reasons("VirtualMachine", "web")) > 0 && len(reasons("VirtualMachineInstance", "web")) > 0, nil
			})
			assert.Contains(t, reasons("VirtualMachine", "web"), "SuccessfulCreate")
			assert.Contains(t, reasons("VirtualMachineInstance", "web"), vmicontroller.SuccessfulCreatePodReason)
		})

		// virtctl stop: the VM turns Halted, the instance and its pod go.
		require.NoError(t, c.action(ns, "web", "stop", ""))
		waitFor(t, wait, "instance and pod gone, VM Stopped", func() (bool, error) {
			vm := c.vm(ns, "web")
			return c.gone(ns, "web") && len(c.launcherPods(ns)) == 0 &&
				vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil
		})
		assert.Equal(t, v1.RunStrategyHalted, *c.vm(ns, "web").Spec.RunStrategy)
		waitFor(t, wait, "deletion events", func() (bool, error) {
			var vmDeleted, podDeleted bool
			for _, e := range c.events(ns, "VirtualMachine", "web") {
				vmDeleted = vmDeleted || e.Reason == "SuccessfulDelete"
			}
			for _, e := range c.events(ns, "VirtualMachineInstance", "web") {
				podDeleted = podDeleted || e.Reason == vmicontroller.SuccessfulDeletePodReason
			}
			return vmDeleted && podDeleted, nil
		})

		require.NoError(t, c.action(ns, "web", "start", ""))
		waitFor(t, wait, "a new instance with a new pod", func() (bool, error) {
			vmi, err := c.vmi(ns, "web")
			return err == nil && vmi.UID != first.UID && len(c.launcherPods(ns)[string(vmi.UID)]) == 1, nil
		})
	})

	t.Run("a paused start switches a Halted VM to Always", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("paused")
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("later", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err)
		waitFor(t, wait, "Stopped", func() (bool, error) {
			return c.vm(ns, "later").Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil
		})
		// virt-api leaves a Halted VM's spec alone for a paused start and queues a request.
		require.NoError(t, c.action(ns, "later", "start", `{"paused":true}`))
		waitFor(t, wait, "Always, an instance, the request consumed", func() (bool, error) {
			vm := c.vm(ns, "later")
			_, err := c.vmi(ns, "later")
			return err == nil && *vm.Spec.RunStrategy == v1.RunStrategyAlways && len(vm.Status.StateChangeRequests) == 0, nil
		})
	})

	t.Run("Manual: start and stop requests", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("manual")
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("man", v1.RunStrategyManual), metav1.CreateOptions{})
		require.NoError(t, err)
		waitFor(t, wait, "Stopped", func() (bool, error) {
			return c.vm(ns, "man").Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil
		})
		require.NoError(t, c.action(ns, "man", "start", ""))
		waitFor(t, wait, "started, request consumed", func() (bool, error) {
			_, err := c.vmi(ns, "man")
			return err == nil && len(c.vm(ns, "man").Status.StateChangeRequests) == 0, nil
		})
		require.NoError(t, c.action(ns, "man", "stop", ""))
		waitFor(t, wait, "stopped, request consumed", func() (bool, error) {
			vm := c.vm(ns, "man")
			return c.gone(ns, "man") && len(vm.Status.StateChangeRequests) == 0 &&
				vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil
		})
		assert.Equal(t, v1.RunStrategyManual, *c.vm(ns, "man").Spec.RunStrategy)
	})

	t.Run("a replica set scales", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("replicas")
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("pool", 3), metav1.CreateOptions{})
		require.NoError(t, err)
		count := func(want int) {
			t.Helper()
			waitFor(t, wait, fmt.Sprintf("%d instances, each with one pod", want), func() (bool, error) {
				l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=pool"})
				if err != nil || len(l.Items) != want {
					return false, err
				}
				pods := c.launcherPods(ns)
				for _, vmi := range l.Items {
					if len(pods[string(vmi.UID)]) != 1 {
						return false, nil
					}
				}
				rs, err := c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Get(ctx, "pool", metav1.GetOptions{})
				return err == nil && len(pods) == want && rs.Status.Replicas == int32(want), err
			})
		}
		count(3)
		out, err := c.Kubectl("scale", "vmirs", "pool", "-n", ns, "--replicas=5")
		require.NoError(t, err, out)
		count(5)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).UpdateScale(ctx, "pool",
			&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}, metav1.UpdateOptions{})
		require.NoError(t, err)
		count(1)
		sc, err := c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).GetScale(ctx, "pool", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(1), sc.Status.Replicas)
		assert.Equal(t, "set=pool", sc.Status.Selector)
	})

	// virt-api checks the launcher pod of every instance, whoever creates it: the replica
	// set's instances in a namespace whose quota leaves no room for a pod are refused (403),
	// and the set says why in its ReplicaFailure condition, retrying at the work queue's
	// back-off pace.
	t.Run("a replica set in a namespace without room for pods says why", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("no-room")
		_, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "none"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		probe := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: guest()}
		waitFor(t, wait, "virt-api sees the quota", func() (bool, error) {
			_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsForbidden(err), nil
		})

		_, err = c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("full", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		creates := "POST /apis/kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances 403"
		waitFor(t, wait, "the ReplicaFailure condition", func() (bool, error) {
			rs, err := c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Get(ctx, "full", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range rs.Status.Conditions {
				if cond.Type == v1.VirtualMachineInstanceReplicaSetReplicaFailure {
					assert.Equal(t, replicaset.FailedCreateReason, cond.Reason)
					assert.Contains(t, cond.Message, "virtualmachineinstances.kubevirt.io is forbidden: launcher pod: exceeded quota: none, "+
						"requested: pods=1, used: pods=0, limited: pods=0")
					return true, nil
				}
			}
			return false, nil
		})
		list, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, list.Items)
		// The tries back off (5 ms doubling): a handful in a few seconds, not a loop.
		before := c.requests.count(creates)
		time.Sleep(5 * time.Second)
		assert.Less(t, c.requests.count(creates)-before, 20, "creates refused in 5 s")
	})

	// A VM admitted before its namespace ran out of room: the instance the controller creates
	// for it is checked too, and the VM's Failure condition says why.
	t.Run("a VM whose instance is refused says why", func(t *testing.T) {
		c := c.with(t)
		ns := c.namespace("filled-up")
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("late", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "none"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		probe := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: guest()}
		waitFor(t, wait, "virt-api sees the quota", func() (bool, error) {
			_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsForbidden(err), nil
		})

		c.startController()
		waitFor(t, wait, "the VM's Failure condition", func() (bool, error) {
			for _, cond := range c.vm(ns, "late").Status.Conditions {
				if cond.Type == v1.VirtualMachineFailure && cond.Status == corev1.ConditionTrue {
					assert.Contains(t, cond.Message, `virtualmachineinstances.kubevirt.io "late" is forbidden: launcher pod: exceeded quota: none`)
					return true, nil
				}
			}
			return false, nil
		})
		_, err = c.vmi(ns, "late")
		assert.True(t, apierrors.IsNotFound(err), "no instance: %v", err)
	})

	t.Run("garbage collection", func(t *testing.T) {
		c := c.with(t)
		stop := c.startController()
		ns := c.namespace("gc")
		running := func(name string) *v1.VirtualMachineInstance {
			t.Helper()
			var vmi *v1.VirtualMachineInstance
			waitFor(t, wait, name+" with a bound pod", func() (bool, error) {
				got, err := c.vmi(ns, name)
				if err != nil {
					return false, nil
				}
				pods := c.launcherPods(ns)[string(got.UID)]
				if len(pods) != 1 {
					return false, nil
				}
				if pods[0].Spec.NodeName == "" {
					c.bindPod(&pods[0], "node-a")
				}
				vmi = got
				return got.Status.Phase == v1.Scheduled, nil
			})
			return vmi
		}
		for _, name := range []string{"background", "foreground"} {
			_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM(name, v1.RunStrategyAlways), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		background, foreground := running("background"), running("foreground")

		// kubectl's default: the VM goes at once, and the garbage collector deletes its
		// instance (the VM controller never sees a deleting VM); the instance controller
		// then deletes the pod and lets the instance go.
		out, err := c.Kubectl("delete", "vm", "background", "-n", ns)
		require.NoError(t, err, out)
		waitFor(t, wait, "the instance and pod of the deleted VM gone", func() (bool, error) {
			return c.gone(ns, "background") && len(c.launcherPods(ns)[string(background.UID)]) == 0, nil
		})

		// Foreground: the VM stays until its instance, and the instance's pod, are gone.
		out, err = c.Kubectl("delete", "vm", "foreground", "-n", ns, "--cascade=foreground", "--wait=false")
		require.NoError(t, err, out)
		waitFor(t, wait, "the foreground deletion to finish", func() (bool, error) {
			_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "foreground", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && c.gone(ns, "foreground") && len(c.launcherPods(ns)[string(foreground.UID)]) == 0, nil
		})

		// With the controller down, an instance forced out of the API (finalizer removed)
		// still takes its pod with it: the garbage collector follows the pod's owner
		// reference into the aggregated API.
		vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "forced"}, Spec: guest()}
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{})
		require.NoError(t, err)
		forced := running("forced")
		stop()
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Patch(ctx, "forced", types.JSONPatchType,
			[]byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"`+vmicontroller.Finalizer+`"},{"op":"remove","path":"/metadata/finalizers/0"}]`),
			metav1.PatchOptions{})
		require.NoError(t, err)
		require.NoError(t, c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Delete(ctx, "forced", metav1.DeleteOptions{}))
		waitFor(t, wait, "the garbage collector to delete the pod", func() (bool, error) {
			return len(c.launcherPods(ns)[string(forced.UID)]) == 0, nil
		})
	})

	t.Run("a restarted controller loses nothing and duplicates nothing", func(t *testing.T) {
		c := c.with(t)
		ns := c.namespace("restart")
		const n = 40
		for i := range n {
			_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM(fmt.Sprintf("vm-%02d", i), v1.RunStrategyAlways), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		// Stop while it is creating instances and pods, then let a new one finish.
		stop := c.startController()
		waitFor(t, wait, "some instances", func() (bool, error) {
			l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) >= n/4, err
		})
		stop()
		l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		t.Logf("stopped with %d of %d instances and %d pods", len(l.Items), n, len(c.launcherPods(ns)))
		c.startController()
		waitFor(t, wait, "every VM with one Scheduling instance and one pod", func() (bool, error) {
			l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) != n {
				return false, err
			}
			pods := c.launcherPods(ns)
			for _, vmi := range l.Items {
				if vmi.Status.Phase != v1.Scheduling || len(pods[string(vmi.UID)]) != 1 {
					return false, nil
				}
			}
			return len(pods) == n, nil
		})
		// A create cut short by the stop may have landed without its answer, so the counts of
		// answered creates are at most n; the pods above are the proof of no duplicates.
		assert.LessOrEqual(t, c.requests.count("POST /api/v1/namespaces/"+ns+"/pods 201"), n)
		assert.LessOrEqual(t, c.requests.count("POST /apis/kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances 201"), n)
		assert.Zero(t, c.requests.countPrefix("DELETE /api/v1/namespaces/"+ns+"/pods/"), "no pod was deleted")
	})

	t.Run("a configuration change applies to the next pod", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("reconfigured")
		c.setConfig(map[string]string{clusterconfig.KeyUseEmulation: "false", clusterconfig.KeyLauncherImage: "hangar.local/virt-launcher:v2"})
		t.Cleanup(func() {
			c.setConfig(map[string]string{clusterconfig.KeyUseEmulation: "true", clusterconfig.KeyLauncherImage: testLauncherImage})
		})
		// The controller sees the change through its watch, a moment later.
		time.Sleep(time.Second)
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("kvm", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
		waitFor(t, wait, "a pod asking for /dev/kvm", func() (bool, error) {
			for _, pods := range c.launcherPods(ns) {
				compute := pods[0].Spec.Containers[0]
				_, kvm := compute.Resources.Limits[layout.KVMResource]
				return kvm && compute.Image == "hangar.local/virt-launcher:v2", nil
			}
			return false, nil
		})
	})

	t.Run("an instance waits for its missing claim, then maps a block claim as a device", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("claims")
		vm := newVM("disks", v1.RunStrategyAlways)
		tmpl := &vm.Spec.Template.Spec
		for _, name := range []string{"fs", "blk"} {
			tmpl.Domain.Devices.Disks = append(tmpl.Domain.Devices.Disks, v1.Disk{Name: name})
			tmpl.Volumes = append(tmpl.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + name},
			}}})
		}
		claim := func(name string, mode corev1.PersistentVolumeMode) {
			_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &mode,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		claim("claim-fs", corev1.PersistentVolumeFilesystem)
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err)

		want := "PVC " + ns + "/claim-blk does not exist, waiting for it to appear"
		waitFor(t, wait, "a Pending instance and the VM's ErrorPvcNotFound", func() (bool, error) {
			vmi, err := c.vmi(ns, "disks")
			if err != nil {
				return false, err
			}
			return vmi.Status.Phase == v1.Pending && c.vm(ns, "disks").Status.PrintableStatus == v1.VirtualMachineStatusPvcNotFound, nil
		})
		vmi, err := c.vmi(ns, "disks")
		require.NoError(t, err)
		var messages []string
		for _, cond := range vmi.Status.Conditions {
			if cond.Status == corev1.ConditionFalse && (cond.Type == v1.VirtualMachineInstanceSynchronized || cond.Type == vmicontroller.PodScheduledCondition) {
				messages = append(messages, cond.Message)
			}
		}
		assert.Equal(t, []string{want, want}, messages)
		assert.Empty(t, c.launcherPods(ns))
		var reasons []string
		for _, e := range c.events(ns, "VirtualMachineInstance", "disks") {
			reasons = append(reasons, e.Reason+": "+e.Message)
		}
		assert.Contains(t, reasons, vmicontroller.FailedPvcNotFoundReason+": "+want)

		claim("claim-blk", corev1.PersistentVolumeBlock)
		var pod corev1.Pod
		waitFor(t, wait, "a launcher pod once the claim exists", func() (bool, error) {
			for _, pods := range c.launcherPods(ns) {
				pod = pods[0]
				return true, nil
			}
			return false, nil
		})
		compute := pod.Spec.Containers[0]
		assert.Equal(t, []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/blk"}}, compute.VolumeDevices)
		assert.Contains(t, compute.VolumeMounts, corev1.VolumeMount{Name: "fs", MountPath: launcherpod.PVCMountDir + "/fs"})
		waitFor(t, wait, "the waiting conditions gone", func() (bool, error) {
			vmi, err := c.vmi(ns, "disks")
			if err != nil {
				return false, err
			}
			for _, cond := range vmi.Status.Conditions {
				if cond.Type == v1.VirtualMachineInstanceSynchronized {
					return false, nil
				}
			}
			return vmi.Status.Phase == v1.Scheduling, nil
		})
	})

	t.Run("a launcher pod that cannot mount its cloud-init Secret: the instance says why", func(t *testing.T) {
		c := c.with(t)
		c.startController()
		ns := c.namespace("secrets")
		spec := guest()
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, v1.Disk{Name: "seed"})
		spec.Volumes = append(spec.Volumes, v1.Volume{Name: "seed", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{
			UserDataSecretRef: &corev1.LocalObjectReference{Name: "seed"},
		}}})
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
			&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "seeded"}, Spec: spec}, metav1.CreateOptions{})
		require.NoError(t, err)

		var pod corev1.Pod
		waitFor(t, wait, "a launcher pod", func() (bool, error) {
			for _, pods := range c.launcherPods(ns) {
				pod = pods[0]
				return true, nil
			}
			return false, nil
		})
		assert.Contains(t, pod.Spec.Volumes, corev1.Volume{Name: "hangar-secret-0", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: "seed", DefaultMode: ptr.To[int32](0o644)}}}, "defaulted by kube-apiserver")
		assert.Contains(t, pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "hangar-secret-0", MountPath: launcherpod.SecretsDir + "/seed", ReadOnly: true})
		c.bindPod(&pod, "node-a")

		// What the node's kubelet reports while the Secret does not exist.
		msg := `MountVolume.SetUp failed for volume "hangar-secret-0" : secret "seed" not found`
		_, err = c.Kube.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: pod.Name + "."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID, APIVersion: "v1"},
			Reason:         vmicontroller.FailedMountReason, Message: msg, Type: corev1.EventTypeWarning,
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitFor(t, wait, "Synchronized False with the kubelet's message", func() (bool, error) {
			vmi, err := c.vmi(ns, "seeded")
			if err != nil {
				return false, err
			}
			cond := vmi.Status.Condition(v1.VirtualMachineInstanceSynchronized)
			return vmi.Status.Phase == v1.Scheduled && cond != nil && cond.Status == corev1.ConditionFalse &&
				cond.Reason == vmicontroller.FailedMountReason && cond.Message == msg, nil
		})
		waitFor(t, wait, "a FailedMount event on the instance", func() (bool, error) {
			for _, e := range c.events(ns, "VirtualMachineInstance", "seeded") {
				if e.Reason == vmicontroller.FailedMountReason && e.Message == msg {
					return true, nil
				}
			}
			return false, nil
		})

		// The Secret appeared, the kubelet mounted it and started the pod.
		running, err := c.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		require.NoError(t, err)
		running.Status.Phase = corev1.PodRunning
		_, err = c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitFor(t, wait, "the condition gone", func() (bool, error) {
			vmi, err := c.vmi(ns, "seeded")
			return err == nil && vmi.Status.Condition(v1.VirtualMachineInstanceSynchronized) == nil, err
		})
	})

	t.Run("RBAC: the ServiceAccount can do what the controllers do, nothing more", func(t *testing.T) {
		sa := "system:serviceaccount:" + controllerNamespace + ":" + controllerServiceAccount
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"create", "pods", "-n", "any"}, "yes"},
			{[]string{"delete", "pods", "-n", "any"}, "yes"},
			{[]string{"update", "pods", "-n", "any"}, "no"},
			{[]string{"create", "pods", "--subresource=binding", "-n", "any"}, "no"},
			{[]string{"create", "pods", "--subresource=exec", "-n", "any"}, "no"},
			{[]string{"watch", "persistentvolumeclaims", "-n", "any"}, "yes"},
			{[]string{"update", "persistentvolumeclaims", "-n", "any"}, "no"},
			{[]string{"get", "secrets", "-n", "any"}, "no"},
			{[]string{"list", "secrets", "-n", "any"}, "no"},
			{[]string{"list", "events", "-n", "any"}, "yes"},
			{[]string{"watch", "events", "-n", "any"}, "no"}, // read when needed, never cached
			{[]string{"delete", "events", "-n", "any"}, "no"},
			{[]string{"get", "configmaps", "-n", "any"}, "no"},
			{[]string{"watch", "configmaps", "-n", controllerNamespace}, "yes"},
			{[]string{"update", "leases.coordination.k8s.io", "-n", controllerNamespace}, "yes"},
			{[]string{"update", "leases.coordination.k8s.io", "-n", "any"}, "no"},
			{[]string{"create", "virtualmachineinstances.kubevirt.io", "-n", "any"}, "yes"},
			{[]string{"update", "virtualmachineinstances.kubevirt.io/status", "-n", "any"}, "yes"},
			// A restore to a new name creates the VM; virt-api stores such a restore only when its
			// user may create virtualmachines in the namespace.
			{[]string{"create", "virtualmachines.kubevirt.io", "-n", "any"}, "yes"},
			// A clone's snapshot and restore, made and deleted by the clone controller; virt-api
			// stores a clone only when its user may snapshot the source and create the target.
			{[]string{"create", "virtualmachinesnapshots.snapshot.kubevirt.io", "-n", "any"}, "yes"},
			{[]string{"delete", "virtualmachinerestores.snapshot.kubevirt.io", "-n", "any"}, "yes"},
			{[]string{"update", "virtualmachinesnapshots.snapshot.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"update", "virtualmachineclones.clone.kubevirt.io", "--subresource=status", "-n", "any"}, "yes"},
			{[]string{"update", "virtualmachineclones.clone.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"create", "virtualmachineclones.clone.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"update", "virtualmachinesnapshots.snapshot.kubevirt.io", "--subresource=status", "-n", "any"}, "yes"},
			{[]string{"delete", "virtualmachinesnapshotcontents.snapshot.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"delete", "virtualmachines.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"update", "virtualmachineinstancereplicasets.kubevirt.io", "-n", "any"}, "no"},
			{[]string{"update", "virtualmachines.kubevirt.io", "--subresource=start", "-n", "any"}, "no"},
			// Exports: the token and TLS Secrets are made and deleted, never read; the server's
			// Service is the controller's.
			{[]string{"create", "secrets", "-n", "any"}, "yes"},
			{[]string{"update", "secrets", "-n", "any"}, "no"},
			{[]string{"create", "services", "-n", "any"}, "yes"},
			{[]string{"update", "services", "-n", "any"}, "no"},
			{[]string{"update", "virtualmachineexports.export.kubevirt.io", "--subresource=status", "-n", "any"}, "yes"},
			{[]string{"create", "virtualmachineexports.export.kubevirt.io", "-n", "any"}, "no"},
		} {
			out, _ := c.Kubectl(append(append([]string{"auth", "can-i"}, tc.args...), "--as", sa)...)
			assert.Equal(t, tc.want, strings.TrimSpace(out), "can-i %v", tc.args)
		}
		// A running guest is frozen for its snapshot and thawed after; nothing else of its.
		// subresources.kubevirt.io is virt-api's, not served here, so kubectl cannot name it:
		// asked as virt-api asks.
		for _, tc := range []struct {
			verb, subresource string
			want              bool
		}{
			{"update", "freeze", true}, {"update", "unfreeze", true}, {"get", "console", false},
			{"update", "pause", false}, {"update", "softreboot", false},
		} {
			review, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNamespace},
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "any", Verb: tc.verb,
						Group: "subresources.kubevirt.io", Resource: "virtualmachineinstances", Subresource: tc.subresource}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, review.Status.Allowed, "%s virtualmachineinstances/%s", tc.verb, tc.subresource)
		}
	})
}
