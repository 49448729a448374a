package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/operator/apply"
	"github.com/hangarvm/hangar/pkg/operator/pki"
	"github.com/hangarvm/hangar/pkg/operator/preflight"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// Reasons of the conditions besides the preflight's.
const (
	ReasonInvalidSpec  = "InvalidSpec"
	ReasonApplyFailed  = "ApplyFailed"
	ReasonDeploying    = "Deploying"
	ReasonDeployed     = "Deployed"
	ReasonAsExpected   = "AsExpected"
	ReasonUnavailable  = "ComponentsUnavailable"
	ReasonWaitingPhase = "Rolling"
)

// retryBlocked is how soon a refused installation is checked again.
const retryBlocked = 30 * time.Second

// install reconciles a Hangar object that is not being deleted.
func (c *Controller) install(ctx context.Context, h *operatorv1alpha1.Hangar) (time.Duration, error) {
	st := newStatus(h, c.config.Version)
	after, err := c.deploy(ctx, h, st)
	var failure *preflight.Failure
	switch {
	case errors.As(err, &failure):
		st.degraded(failure.Reason, failure.Message)
		after, err = retryBlocked, nil
	case errors.As(err, new(*invalidSpec)):
		st.degraded(ReasonInvalidSpec, err.Error())
		after, err = 0, nil // the next change of the object may fix it
	case err != nil:
		st.degraded(ReasonApplyFailed, err.Error())
	}
	if werr := c.writeStatus(ctx, h, st); werr != nil && err == nil {
		err = werr
	}
	return after, err
}

// invalidSpec is a spec the operator refuses.
type invalidSpec struct{ error }

// deploy does the work of a reconcile and fills st.
func (c *Controller) deploy(ctx context.Context, h *operatorv1alpha1.Hangar, st *status) (time.Duration, error) {
	spec := h.Spec
	lifetimes := pki.LifetimesFrom(spec.CertificateRotateStrategy)
	if err := lifetimes.Validate(); err != nil {
		return 0, &invalidSpec{err}
	}
	if err := render.ValidateSpec(spec); err != nil {
		return 0, &invalidSpec{err}
	}
	if err := preflight.Install(ctx, c.preflightClients(), spec, func(s *apiregistrationv1.APIService) bool { return ours(s.Labels) }); err != nil {
		return 0, err
	}

	if err := c.labelNamespace(ctx); err != nil {
		return 0, err
	}
	// The Prometheus Operator's kinds, asked at every reconcile: CustomResourceDefinitions
	// installed after Hangar get their objects at the next one (at most Resync away).
	served, err := apply.Served(c.clients.Kube.Discovery())
	if err != nil {
		return 0, err
	}
	settings := render.Settings{Version: c.config.Version, Images: c.config.Images, Spec: spec, LauncherImage: c.launcherImage(false),
		Served: served}
	objs, err := render.Objects(settings)
	if err != nil {
		return 0, &invalidSpec{err}
	}
	// etcd's serving certificate names the Service's address, known once the Service exists.
	etcdIP, err := c.applyEtcdService(ctx, objs)
	if err != nil {
		return 0, err
	}
	secrets, next, err := c.reconcilePKI(ctx, h, pki.Request{Now: c.now(), Lifetimes: lifetimes, EtcdServiceIP: etcdIP,
		EtcdMembers: int(etcdReplicas(spec))})
	if err != nil {
		return 0, err
	}
	settings.CABundle = secrets[pki.HangarCA][pki.KeyBundle]
	settings.TrustHashes = pki.TrustHashes(secrets)
	if objs, err = render.Objects(settings); err != nil {
		return 0, &invalidSpec{err}
	}
	untilPKI := next.Sub(c.now())

	applied := map[string]int64{}
	for phase := render.PhaseEtcd; phase <= render.PhaseHandler; phase++ {
		for _, o := range objs {
			if o.Phase != phase {
				continue
			}
			stored, err := c.applier.Apply(ctx, o.Object)
			if err != nil {
				return 0, err
			}
			applied[stored.GetKind()+"/"+stored.GetName()] = stored.GetGeneration()
		}
		if ready, why := c.rolledOut(phase, objs, applied); !ready {
			st.progressing(ReasonWaitingPhase, fmt.Sprintf("rolling out %s: %s", phase, why))
			st.available(c.serving(spec))
			return min(untilPKI, 5*time.Second), nil
		}
	}

	// Every handler runs this version: new launchers may now be of this version too.
	if launcher := c.launcherImage(true); launcher != settings.LauncherImage {
		settings.LauncherImage = launcher
		if objs, err = render.Objects(settings); err != nil {
			return 0, &invalidSpec{err}
		}
		for _, o := range objs {
			if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Name == render.ConfigName {
				if _, err := c.applier.Apply(ctx, cm); err != nil {
					return 0, err
				}
				c.recorder.Eventf(h, corev1.EventTypeNormal, "LauncherUpdated", "new launcher pods run %s", launcher)
			}
		}
	}
	var keep []runtime.Object
	for _, o := range objs {
		keep = append(keep, o.Object)
	}
	for name := range secrets {
		keep = append(keep, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	deleted, err := c.applier.Prune(ctx, apply.KindsServed(apply.Kinds, served), keep)
	if err != nil {
		return 0, err
	}
	for _, d := range deleted {
		c.recorder.Eventf(h, corev1.EventTypeNormal, "Pruned", "deleted %s, which this version no longer has", d)
	}

	if err := c.checkKVM(ctx, spec); err != nil {
		return min(untilPKI, retryBlocked), err
	}
	st.deployed()
	st.available(c.serving(spec))
	st.OutdatedVirtualMachineInstanceWorkloads = c.outdatedWorkloads(ctx)
	if n := st.OutdatedVirtualMachineInstanceWorkloads; n != nil && *n > 0 {
		return min(untilPKI, 30*time.Second), nil // the count changes with no event of the operator's objects
	}
	return untilPKI, nil
}

// namespaceLabels let virt-handler, which is privileged, run in Hangar's namespace whatever
// the cluster's default Pod Security level; every other pod of it meets restricted, which the
// audit level reports if that ever changes. (A namespace Helm creates has no labels.)
var namespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "privileged",
	"pod-security.kubernetes.io/audit":   "restricted",
}

func (c *Controller) labelNamespace(ctx context.Context) error {
	_, err := c.clients.Kube.CoreV1().Namespaces().Apply(ctx, corev1apply.Namespace(render.Namespace).WithLabels(namespaceLabels),
		metav1.ApplyOptions{FieldManager: apply.FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("label namespace %s for Pod Security: %w", render.Namespace, err)
	}
	return nil
}

// applyEtcdService applies the etcd client Service and returns its ClusterIP.
func (c *Controller) applyEtcdService(ctx context.Context, objs []render.Object) (net.IP, error) {
	for _, o := range objs {
		svc, ok := o.Object.(*corev1.Service)
		if !ok || svc.Name != render.EtcdName {
			continue
		}
		stored, err := c.applier.Apply(ctx, svc)
		if err != nil {
			return nil, err
		}
		ip, _, _ := unstructured.NestedString(stored.Object, "spec", "clusterIP")
		if parsed := net.ParseIP(ip); parsed != nil {
			return parsed, nil
		}
		return nil, fmt.Errorf("the Service %s has no ClusterIP yet", render.EtcdName)
	}
	return nil, fmt.Errorf("the component manifests have no Service %s", render.EtcdName)
}

// reconcilePKI brings the PKI's Secrets to what pki.Reconcile decides, writing only those that
// change, and returns them all and when to look again.
func (c *Controller) reconcilePKI(ctx context.Context, h *operatorv1alpha1.Hangar, r pki.Request) (pki.Secrets, time.Time, error) {
	existing := pki.Secrets{}
	secrets, err := c.secrets.Secrets(render.Namespace).List(labels.Everything())
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, s := range secrets {
		existing[s.Name] = s.Data
	}
	desired, next, err := pki.Reconcile(existing, r)
	if err != nil {
		return nil, time.Time{}, &invalidSpec{err}
	}
	for name, data := range desired {
		if equalData(existing[name], data) {
			continue
		}
		secret := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: render.Namespace},
			Type:       corev1.SecretType(pki.SecretType(name)),
			Data:       data,
		}
		setManaged(secret, c.config.Version)
		if _, err := c.applier.Apply(ctx, secret); err != nil {
			return nil, time.Time{}, err
		}
		if existing[name] != nil {
			klog.InfoS("certificates renewed", "secret", name)
			c.recorder.Eventf(h, corev1.EventTypeNormal, "CertificateRenewed", "renewed %s", name)
		}
	}
	return desired, next, nil
}

func equalData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func setManaged(s *corev1.Secret, version string) {
	s.Labels = map[string]string{render.ManagedByLabel: render.ManagedBy, render.PartOfLabel: "hangar", render.VersionLabel: version}
}

func etcdReplicas(spec operatorv1alpha1.HangarSpec) int32 {
	if spec.Etcd.Replicas != nil {
		return *spec.Etcd.Replicas
	}
	return render.DefaultEtcdReplicas
}

// launcherImage is the launcher image hangar-config should name: this version's once every
// handler runs it (handlersDone), else what it names already (an older version's, during an
// upgrade), or this version's on a new installation.
func (c *Controller) launcherImage(handlersDone bool) string {
	if handlersDone {
		return c.config.Images.VirtLauncher
	}
	cm, err := c.configMaps.ConfigMaps(render.Namespace).Get(render.ConfigName)
	if err == nil && cm.Data[clusterconfig.KeyLauncherImage] != "" {
		return cm.Data[clusterconfig.KeyLauncherImage]
	}
	return c.config.Images.VirtLauncher
}

// checkKVM runs the KVM preflight once the handlers run (their device plugin offers it).
func (c *Controller) checkKVM(ctx context.Context, spec operatorv1alpha1.HangarSpec) error {
	nodes, err := c.clients.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var ptrs []*corev1.Node
	for i := range nodes.Items {
		ptrs = append(ptrs, &nodes.Items[i])
	}
	return preflight.KVM(ptrs, spec)
}

// outdatedWorkloads counts the instances whose launcher is of an older version (virt-controller
// labels them); nil when virt-api does not answer.
func (c *Controller) outdatedWorkloads(ctx context.Context) *int {
	list, err := c.clients.KubeVirt.KubevirtV1().VirtualMachineInstances("").List(ctx,
		metav1.ListOptions{LabelSelector: kubevirtv1.OutdatedLauncherImageLabel})
	if err != nil {
		klog.V(2).InfoS("Cannot count outdated workloads", "err", err)
		return nil
	}
	n := len(list.Items)
	return &n
}
