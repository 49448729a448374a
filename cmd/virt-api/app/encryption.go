package app

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/yaml"
)

// encryptedResources reads which resources an encryption configuration
// (--encryption-provider-config, apiserver.config.k8s.io/v1 EncryptionConfiguration) names.
// k8s.io/apiserver has validated the file by the time this runs.
func encryptedResources(path string) ([]schema.GroupResource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read encryption configuration: %w", err)
	}
	var config apiserverv1.EncryptionConfiguration
	if err := yaml.Unmarshal(data, &config); err != nil {
		return nil, fmt.Errorf("parse encryption configuration %s: %w", path, err)
	}
	var named []schema.GroupResource
	for _, entry := range config.Resources {
		for _, name := range entry.Resources {
			named = append(named, schema.ParseGroupResource(name))
		}
	}
	return named, nil
}

// namedIn reports whether resource is among named, directly, as "*.<group>" or as "*.*":
// the forms for which k8s.io/apiserver applies the configuration's providers.
func namedIn(resource schema.GroupResource, named []schema.GroupResource) bool {
	for _, n := range named {
		if n == resource || (n.Group == resource.Group && n.Resource == "*") || (n.Group == "*" && n.Resource == "*") {
			return true
		}
	}
	return false
}

// requireEncryptionConfig refuses storage for a resource the encryption configuration does
// not name. k8s.io/apiserver silently stores such a resource in plaintext, and the easy
// mistake is a name without its group: "virtualmachines" means the core group's, so it
// encrypts nothing of Hangar's. Failing at startup turns that into an error message.
type requireEncryptionConfig struct {
	generic.RESTOptionsGetter
	path  string
	named []schema.GroupResource
}

func (r requireEncryptionConfig) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	if !namedIn(resource, r.named) {
		return generic.RESTOptions{}, fmt.Errorf("encryption configuration %s does not name %s, which virt-api would then store in plaintext: "+
			"list it as %q (or %q)", r.path, resource, resource.Resource+"."+resource.Group, "*."+resource.Group)
	}
	return r.RESTOptionsGetter.GetRESTOptions(resource, example)
}
