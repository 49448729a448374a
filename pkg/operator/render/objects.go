package render

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// TrustHashAnnotation on a pod template holds the hash of the CA bundles its pods read only at
// start: a new bundle (a CA rotation) rolls them.
const TrustHashAnnotation = "hangarvm.io/trust-hash"

// Names of the components' workloads.
const (
	EtcdName           = "hangar-etcd"
	VirtAPIName        = "virt-api"
	VirtControllerName = "virt-controller"
	VirtHandlerName    = "virt-handler"
	ConfigName         = "hangar-config"
)

// Objects renders every object of the installation for settings, in phase order.
func Objects(s Settings) ([]Object, error) {
	if err := s.Images.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateSpec(s.Spec); err != nil {
		return nil, err
	}
	all, err := manifests()
	if err != nil {
		return nil, err
	}
	var objs []Object
	for _, o := range all {
		if u, ok := o.Object.(*unstructured.Unstructured); ok && !s.Served[u.GroupVersionKind()] {
			continue // a monitoring object of a kind the cluster does not serve
		}
		if launcherDevicesPolicy(o.Object) && !s.Spec.Configuration.LauncherDevicesOnly {
			continue // pruned if an earlier spec had it
		}
		objs = append(objs, o)
	}
	objs = append(objs, Catalogue()...)
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Phase < objs[j].Phase })
	for _, o := range objs {
		if err := customize(o.Object, s); err != nil {
			return nil, err
		}
		if err := label(o.Object, s.Version); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// LauncherDevicesPolicyName names the ValidatingAdmissionPolicy (and its binding) that keeps
// Hangar's devices for launcher pods, rendered only with spec.configuration.launcherDevicesOnly.
const LauncherDevicesPolicyName = "hangar-launcher-devices"

func launcherDevicesPolicy(obj interface{}) bool {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return o.Name == LauncherDevicesPolicyName
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return o.Name == LauncherDevicesPolicyName
	}
	return false
}

// label marks an object as the operator's, of this version.
func label(obj interface{}, version string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	labels := m.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedBy
	labels[PartOfLabel] = "hangar"
	labels[VersionLabel] = version
	m.SetLabels(labels)
	return nil
}

// customize applies the settings to one manifest object.
func customize(obj interface{}, s Settings) error {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		if o.Name == EtcdName {
			return etcd(o, s)
		}
	case *appsv1.Deployment:
		switch o.Name {
		case VirtAPIName:
			virtAPI(o, s)
		case VirtControllerName:
			controlPlane(&o.Spec.Template, s, VirtControllerName, "virt-controller", s.Images.VirtController)
			o.Spec.Replicas = ptr.To(infraReplicas(s.Spec))
		}
	case *appsv1.DaemonSet:
		if o.Name == VirtHandlerName {
			virtHandler(o, s)
		}
	case *policyv1.PodDisruptionBudget:
		if o.Name == EtcdName {
			// A quorum of three survives one member away; one member must still let a node drain.
			o.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
	case *corev1.ConfigMap:
		if o.Name == ConfigName {
			data, err := ConfigData(s.Spec, s.LauncherImage)
			if err != nil {
				return err
			}
			o.Data = data
		}
	case *apiregistrationv1.APIService:
		o.Spec.CABundle = s.CABundle
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			o.Webhooks[i].ClientConfig.CABundle = s.CABundle
		}
	}
	return nil
}

func infraReplicas(spec operatorv1alpha1.HangarSpec) int32 {
	if spec.Infra != nil && spec.Infra.Replicas != nil {
		return *spec.Infra.Replicas
	}
	return DefaultReplicas
}

// controlPlane sets what the control plane's pods share: the image of the named container,
// the pull policy, the infrastructure placement and the trust hash of the workload.
func controlPlane(t *corev1.PodTemplateSpec, s Settings, workload, container, image string) {
	setImage(t, container, image, s.Spec)
	if s.Spec.Infra != nil {
		place(&t.Spec, s.Spec.Infra.NodePlacement)
	}
	if h := s.TrustHashes[workload]; h != "" {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[TrustHashAnnotation] = h
	}
}

func virtAPI(d *appsv1.Deployment, s Settings) {
	controlPlane(&d.Spec.Template, s, VirtAPIName, "virt-api", s.Images.VirtAPI)
	d.Spec.Replicas = ptr.To(infraReplicas(s.Spec))
	if s.Spec.Configuration.AuthorizeWebhookCallers {
		c := container(&d.Spec.Template, "virt-api")
		c.Args = append(c.Args, "--authorize-webhook-callers")
	}
}

func virtHandler(d *appsv1.DaemonSet, s Settings) {
	// The init container probes QEMU from the same image: it is the launchers' root file system.
	setImage(&d.Spec.Template, "virt-handler", s.Images.VirtHandler, s.Spec)
	setImage(&d.Spec.Template, "qemu-capabilities", s.Images.VirtHandler, s.Spec)
	if s.Spec.Workloads != nil && s.Spec.Workloads.NodePlacement != nil {
		p := s.Spec.Workloads.NodePlacement
		d.Spec.Template.Spec.NodeSelector = p.NodeSelector
		d.Spec.Template.Spec.Affinity = p.Affinity
		if p.Tolerations != nil {
			d.Spec.Template.Spec.Tolerations = p.Tolerations
		}
	}
}

// etcd sets the members, the quota, the volume and the placement of Hangar's etcd.
func etcd(st *appsv1.StatefulSet, s Settings) error {
	replicas := DefaultEtcdReplicas
	if s.Spec.Etcd.Replicas != nil {
		replicas = *s.Spec.Etcd.Replicas
	}
	st.Spec.Replicas = ptr.To(replicas)
	controlPlane(&st.Spec.Template, s, EtcdName, "etcd", s.Images.Etcd)
	quota, volume := EtcdVolume(s.Spec.Etcd)
	c := container(&st.Spec.Template, "etcd")
	for i, arg := range c.Args {
		switch {
		case strings.HasPrefix(arg, "--quota-backend-bytes="):
			c.Args[i] = fmt.Sprintf("--quota-backend-bytes=%d", quota.Value())
		case strings.HasPrefix(arg, "--initial-cluster=") && replicas > 1:
			var members []string
			for m := range replicas {
				name := fmt.Sprintf("%s-%d", EtcdName, m)
				members = append(members, fmt.Sprintf("%s=https://%s.%s-peers.%s.svc:2380", name, name, EtcdName, Namespace))
			}
			c.Args[i] = "--initial-cluster=" + strings.Join(members, ",")
		}
	}
	if replicas > 1 {
		// Members on distinct nodes: a node lost takes one vote, never the quorum.
		st.Spec.Template.Spec.Affinity = requiredAntiAffinity(st.Spec.Template.Spec.Affinity, st.Spec.Selector.MatchLabels)
	}
	if len(st.Spec.VolumeClaimTemplates) != 1 {
		return fmt.Errorf("etcd's StatefulSet has %d volume claim templates, not 1", len(st.Spec.VolumeClaimTemplates))
	}
	claim := &st.Spec.VolumeClaimTemplates[0].Spec
	claim.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: volume}
	claim.StorageClassName = s.Spec.Etcd.StorageClassName
	return nil
}

func requiredAntiAffinity(a *corev1.Affinity, selector map[string]string) *corev1.Affinity {
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}})
	return a
}

// place applies a node placement to a pod spec; the manifest's own anti-affinity stays unless
// the placement brings an affinity of its own.
func place(spec *corev1.PodSpec, p *operatorv1alpha1.NodePlacement) {
	if p == nil {
		return
	}
	spec.NodeSelector = p.NodeSelector
	if p.Affinity != nil {
		spec.Affinity = p.Affinity
	}
	spec.Tolerations = p.Tolerations
}

func container(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.InitContainers {
		if t.Spec.InitContainers[i].Name == name {
			return &t.Spec.InitContainers[i]
		}
	}
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	panic(fmt.Sprintf("the component manifests have no container %s", name))
}

func setImage(t *corev1.PodTemplateSpec, name, image string, spec operatorv1alpha1.HangarSpec) {
	c := container(t, name)
	c.Image = image
	c.ImagePullPolicy = pullPolicy(spec)
}
