// Package components embeds the manifests of the components hangar-operator deploys and keeps
// (pkg/operator/render): etcd, virt-api with its APIServices and eviction webhook,
// virt-controller with the cluster configuration, virt-handler, the metrics Service, and the
// admission policy that keeps Hangar's devices for launcher pods (with launcherDevicesOnly).
// What depends on the Hangar object (images, replicas, placement, the member list, the volume,
// caBundles, settings) is set by the operator; the manifests hold what does not.
package components

import "embed"

// FS holds the manifests, one file per component.
//
//go:embed *.yaml
var FS embed.FS
