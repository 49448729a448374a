// Package install registers the export.kubevirt.io group, all its versions, into a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/hangarvm/hangar/pkg/apis/export"
	"github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
)

// Install registers the internal version and v1beta1, which is preferred and stored.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(export.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1beta1.SchemeGroupVersion))
}
