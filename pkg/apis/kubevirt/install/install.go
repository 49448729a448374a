// Package install registers the kubevirt.io group, all its versions, into a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1alpha3"
)

// Install registers the internal version, v1 and v1alpha3, with v1 preferred (and stored).
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(kubevirt.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
	utilruntime.Must(v1alpha3.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1.SchemeGroupVersion, v1alpha3.SchemeGroupVersion))
}
