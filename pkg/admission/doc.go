// Package admission gathers virt-api's admission, one package per plugin, as kube-apiserver
// and sample-apiserver keep theirs:
//
//   - podpolicy (plugin HangarLauncherPod): an instance's launcher pod is built and checked
//     against the namespace's Pod Security level, LimitRanges and ResourceQuotas when the
//     instance is created or its VM started, so a pod the cluster would refuse is refused then;
//   - noderestriction (plugin NodeRestriction, and an authorizer): a virt-handler reaches only
//     the instances of its own node;
//   - eviction: the validating webhook that turns the eviction of a launcher pod into the
//     evacuation of its instance;
//   - quota (plugin ResourceQuota, Kubernetes' own): object count quotas on Hangar's kinds,
//     which kube-apiserver cannot charge for what it proxies.
package admission
