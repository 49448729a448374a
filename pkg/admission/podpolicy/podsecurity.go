package podpolicy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// PodSecurity evaluates launcher pods as kube-apiserver's PodSecurity admission will, with
// its own policy code (k8s.io/pod-security-admission), against the enforce level of the
// pod's namespace.
//
// What virt-api cannot see: kube-apiserver's PodSecurityConfiguration (the cluster-wide
// default level and the exemptions) lives in its --admission-control-config-file. The default
// level therefore is a virt-api flag (privileged, as PodSecurity's own default), and so are
// the exempt namespaces. PodSecurity also exempts by the requesting user: launcher pods are
// created by virt-controller's ServiceAccount, not by the user who created the instance, so a
// cluster that exempts that ServiceAccount must tell virt-api (Exempt) or every namespace
// above privileged would be refused for nothing. RuntimeClass exemptions do not apply: a
// launcher pod names no runtimeClass.
type PodSecurity struct {
	// Default is the level and version of a namespace without the enforce labels.
	Default psaapi.LevelVersion
	// ExemptNamespaces are exempt in kube-apiserver's configuration.
	ExemptNamespaces sets.Set[string]
	// Exempt: kube-apiserver exempts virt-controller's user; nothing is checked.
	Exempt bool

	evaluator policy.Evaluator
}

// NewPodSecurity returns the evaluator for the given defaults and exemptions.
func NewPodSecurity(def psaapi.LevelVersion, exemptNamespaces []string, exempt bool) (*PodSecurity, error) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		return nil, fmt.Errorf("pod security checks: %w", err)
	}
	return &PodSecurity{Default: def, ExemptNamespaces: sets.New(exemptNamespaces...), Exempt: exempt, evaluator: evaluator}, nil
}

// ParseLevelVersion reads a level (privileged, baseline, restricted) and a version (latest,
// v1.N) as the namespace labels give them.
func ParseLevelVersion(level, version string) (psaapi.LevelVersion, error) {
	l, err := psaapi.ParseLevel(level)
	if err != nil {
		return psaapi.LevelVersion{}, err
	}
	v, err := psaapi.ParseVersion(version)
	if err != nil {
		return psaapi.LevelVersion{}, err
	}
	return psaapi.LevelVersion{Level: l, Version: v}, nil
}

// Check returns why the namespace's enforce level forbids the pod, or "". nsLabels are the
// labels of the pod's namespace.
func (p *PodSecurity) Check(pod *corev1.Pod, nsLabels map[string]string) string {
	if p.Exempt || p.ExemptNamespaces.Has(pod.Namespace) {
		return ""
	}
	defaults := psaapi.Policy{Enforce: p.Default, Audit: p.Default, Warn: p.Default}
	// Unparseable labels give restricted:latest, as PodSecurity does (fail closed).
	nsPolicy, _ := psaapi.PolicyToEvaluate(nsLabels, defaults)
	if nsPolicy.Enforce.Level == psaapi.LevelPrivileged {
		return ""
	}
	result := policy.AggregateCheckResults(p.evaluator.EvaluatePod(nsPolicy.Enforce, &pod.ObjectMeta, &pod.Spec))
	if result.Allowed {
		return ""
	}
	return fmt.Sprintf("launcher pod would violate PodSecurity %q: %s", nsPolicy.Enforce.String(), result.ForbiddenDetail())
}
