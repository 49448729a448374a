// Package quota gives virt-api Kubernetes' own ResourceQuota admission plugin
// (k8s.io/apiserver/pkg/admission/plugin/resourcequota, the plugin kube-apiserver runs), so
// that object count quotas on Hangar's kinds (count/virtualmachines.kubevirt.io, ...) hold
// as they hold for a CustomResourceDefinition.
//
// kube-apiserver's quota admission never sees a request it proxies to an aggregated API
// server: whoever serves the resource must admit it. The work is divided as for any
// resource of kube-apiserver:
//
//   - virt-api's plugin charges each create against the namespace's quotas before it is
//     stored: it refuses with kube-apiserver's answer (403, "exceeded quota: ...") or adds
//     the object to the quota's status.used (an update of resourcequotas/status, retried on
//     conflicts, with the charges of concurrent creates batched per namespace).
//   - kube-controller-manager's resource quota controller computes status.used from what
//     exists: it discovers every namespaced resource that supports create, list, watch and
//     delete, aggregated ones included (GetQuotableResources over
//     ServerPreferredNamespacedResources, again every 30 s), counts them with a metadata
//     informer (ObjectOrMetadataInformerFactory) and an object count evaluator of its own,
//     gives a new quota its first status, gives back what deletions free, and recomputes
//     every quota each --resource-quota-sync-period (5 min).
//
// Until the controller has given a quota its status, the plugin refuses creates it covers
// ("status unknown for quota"), as kube-apiserver does.
package quota

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// PluginName is the plugin's name, as in kube-apiserver's --enable-admission-plugins.
const PluginName = resourcequota.PluginName

// Register registers the plugin. Its configuration file (--admission-control-config-file)
// is kube-apiserver's ResourceQuotaConfiguration: limitedResources may require a covering
// quota for creates of a kind.
func Register(plugins *admission.Plugins) { resourcequota.Register(plugins) }

// NewConfiguration returns the evaluators of the given resources: each counts a create as
// one count/<resource>.<group>. The plugin adds the same evaluator for any other resource it
// is asked about; naming them says what is counted.
func NewConfiguration(resources ...schema.GroupResource) quota.Configuration {
	evaluators := make([]quota.Evaluator, 0, len(resources))
	for _, gr := range resources {
		// No lister: admission charges single creates; usage is the controller's to count.
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, nil, ""))
	}
	return generic.NewConfiguration(evaluators, nil)
}

// NewInitializer hands the configuration to the plugin.
func NewInitializer(config quota.Configuration) admission.PluginInitializer {
	return initializer{config: config}
}

type initializer struct{ config quota.Configuration }

func (i initializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(genericinitializer.WantsQuotaConfiguration); ok {
		w.SetQuotaConfiguration(i.config)
	}
}
