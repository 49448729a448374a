// Package apply writes the operator's objects with server-side apply, as one field manager,
// and removes those of its objects that the current version no longer renders. Whatever a
// component manifest stops setting from one version to the next is then removed from the live
// object too, and nothing another manager set is touched.
package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// FieldManager is the operator's name in managedFields.
const FieldManager = "hangar-operator"

// Kind is a kind the operator owns objects of.
type Kind struct {
	schema.GroupVersionKind
	Resource   string
	Namespaced bool
	// Optional kinds are another project's (the Prometheus Operator's), which a cluster may not
	// serve: their objects are rendered, applied, pruned and deleted only where discovery says
	// it does (Served).
	Optional bool
}

// GVR is the kind's resource.
func (k Kind) GVR() schema.GroupVersionResource { return k.GroupVersion().WithResource(k.Resource) }

// Kinds are every kind the operator writes, in the order removal deletes them: the API's
// entry points first (a stale APIService or webhook stalls namespace deletion and evictions
// cluster-wide), the workloads, then what they used.
var Kinds = []Kind{
	{schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, "apiservices", false, false},
	{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, "validatingwebhookconfigurations", false, false},
	{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}, "validatingadmissionpolicies", false, false},
	{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}, "validatingadmissionpolicybindings", false, false},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, "daemonsets", true, false},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true, false},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "statefulsets", true, false},
	{schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, "poddisruptionbudgets", true, false},
	{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, "networkpolicies", true, false},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "services", true, false},
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "configmaps", true, false},
	{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "secrets", true, false},
	{schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}, "podmonitors", true, true},
	{schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, "prometheusrules", true, true},
}

// Served asks the API's discovery which of the optional kinds it serves. A group version it
// does not serve at all is no error; a discovery that fails is.
func Served(d discovery.DiscoveryInterface) (map[schema.GroupVersionKind]bool, error) {
	served := map[schema.GroupVersionKind]bool{}
	resources := map[schema.GroupVersion]map[string]bool{}
	for _, k := range Kinds {
		if !k.Optional {
			continue
		}
		gv := k.GroupVersion()
		if _, asked := resources[gv]; !asked {
			resources[gv] = map[string]bool{}
			list, err := d.ServerResourcesForGroupVersion(gv.String())
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("discover %s: %w", gv, err)
			}
			if list != nil {
				for _, r := range list.APIResources {
					resources[gv][r.Name] = true
				}
			}
		}
		served[k.GroupVersionKind] = resources[gv][k.Resource]
	}
	return served, nil
}

// KindsServed are those of kinds the cluster serves: every kind of Hangar's own, and the
// optional ones served says it serves.
func KindsServed(kinds []Kind, served map[schema.GroupVersionKind]bool) []Kind {
	var out []Kind
	for _, k := range kinds {
		if !k.Optional || served[k.GroupVersionKind] {
			out = append(out, k)
		}
	}
	return out
}

// VirtAPIKinds are kinds the operator writes that virt-api stores: the common instance types
// and preferences. They are applied, but neither pruned nor deleted by kind: listing them
// needs virt-api, which removal takes down first, and they go with Hangar's etcd.
var VirtAPIKinds = []Kind{
	{schema.GroupVersionKind{Group: "instancetype.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineClusterInstancetype"}, "virtualmachineclusterinstancetypes", false, false},
	{schema.GroupVersionKind{Group: "instancetype.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineClusterPreference"}, "virtualmachineclusterpreferences", false, false},
}

func kindOf(gvk schema.GroupVersionKind) (Kind, error) {
	for _, k := range append(Kinds[:len(Kinds):len(Kinds)], VirtAPIKinds...) {
		if k.GroupVersionKind == gvk {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("the operator does not manage %s", gvk)
}

// Applier applies and prunes the operator's objects.
type Applier struct {
	Client dynamic.Interface
	Scheme *runtime.Scheme
	// Namespace of the namespaced objects.
	Namespace string
	// Selector finds the operator's objects (its managed-by label).
	Selector string
}

// Apply writes obj with server-side apply, taking over fields another manager holds: the
// operator's settings win, as a controller's do. It returns the object as stored.
func (a *Applier) Apply(ctx context.Context, obj runtime.Object) (*unstructured.Unstructured, error) {
	u, kind, err := a.unstructured(obj)
	if err != nil {
		return nil, err
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	stored, err := a.resource(kind).Patch(ctx, u.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("apply %s %s: %w", kind.Kind, u.GetName(), err)
	}
	return stored, nil
}

// unstructured is obj as the API takes it, with its kind and without what is the server's.
func (a *Applier) unstructured(obj runtime.Object) (*unstructured.Unstructured, Kind, error) {
	gvks, _, err := a.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, Kind{}, err
	}
	kind, err := kindOf(gvks[0])
	if err != nil {
		return nil, Kind{}, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, Kind{}, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(kind.GroupVersionKind)
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if kind.Namespaced {
		u.SetNamespace(a.Namespace)
	}
	return u, kind, nil
}

func (a *Applier) resource(k Kind) dynamic.ResourceInterface {
	if k.Namespaced {
		return a.Client.Resource(k.GVR()).Namespace(a.Namespace)
	}
	return a.Client.Resource(k.GVR())
}

// Prune deletes the operator's objects of kinds that keep does not hold: what an earlier
// version had and this one no longer renders. It returns the names it deleted.
func (a *Applier) Prune(ctx context.Context, kinds []Kind, keep []runtime.Object) ([]string, error) {
	wanted := map[string]bool{}
	for _, obj := range keep {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		gvks, _, err := a.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		wanted[gvks[0].Kind+"/"+m.GetName()] = true
	}
	var deleted []string
	for _, k := range kinds {
		list, err := a.resource(k).List(ctx, metav1.ListOptions{LabelSelector: a.Selector})
		if err != nil {
			return deleted, fmt.Errorf("list %s: %w", k.Resource, err)
		}
		for _, item := range list.Items {
			id := k.Kind + "/" + item.GetName()
			if wanted[id] || item.GetDeletionTimestamp() != nil {
				continue
			}
			if err := a.resource(k).Delete(ctx, item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("delete %s: %w", id, err)
			}
			deleted = append(deleted, id)
		}
	}
	return deleted, nil
}

// DeleteAll deletes the operator's objects of the given kinds, in their order, and says how
// many of them still exist (being deleted).
func (a *Applier) DeleteAll(ctx context.Context, kinds []Kind) (remaining int, err error) {
	for _, k := range kinds {
		list, err := a.resource(k).List(ctx, metav1.ListOptions{LabelSelector: a.Selector})
		if err != nil {
			return remaining, fmt.Errorf("list %s: %w", k.Resource, err)
		}
		for _, item := range list.Items {
			remaining++
			if item.GetDeletionTimestamp() != nil {
				continue
			}
			// Foreground: a workload is gone only once its pods are.
			policy := metav1.DeletePropagationForeground
			if err := a.resource(k).Delete(ctx, item.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
				return remaining, fmt.Errorf("delete %s %s: %w", k.Kind, item.GetName(), err)
			}
		}
	}
	return remaining, nil
}
