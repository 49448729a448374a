package podrules

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
)

// ValidatePod checks a new pod against the subset of the pod API's ValidatePodCreate that
// concerns what a launcher pod is made of: metadata, unique DNS-label container and volume
// names, images, mounts and devices that refer to volumes, resources, the grace period and
// the scheduling fields. It is no replacement for the API server; it lets tests (the fuzz
// targets among them) hold the pod builder to the rules without one.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	meta := pod.ObjectMeta.DeepCopy()
	if meta.Name == "" && meta.GenerateName != "" {
		// The API server names the pod before it validates it, as here.
		meta.Name = names.SimpleNameGenerator.GenerateName(meta.GenerateName)
	}
	allErrs := apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &pod.Spec
	specPath := field.NewPath("spec")

	volumes, volErrs := validateVolumes(spec.Volumes, specPath.Child("volumes"))
	allErrs = append(allErrs, volErrs...)

	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"), ""))
	}
	// Container names are unique across init and regular containers.
	containerNames := sets.New[string]()
	for i := range spec.InitContainers {
		allErrs = append(allErrs, validateContainer(&spec.InitContainers[i], volumes, containerNames, specPath.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		allErrs = append(allErrs, validateContainer(&spec.Containers[i], volumes, containerNames, specPath.Child("containers").Index(i))...)
	}

	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		allErrs = append(allErrs, field.NotSupported(specPath.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*g, specPath.Child("terminationGracePeriodSeconds"))...)
	}
	allErrs = append(allErrs, ValidateHostname(spec.Hostname, specPath.Child("hostname"))...)
	allErrs = append(allErrs, ValidateHostname(spec.Subdomain, specPath.Child("subdomain"))...)
	allErrs = append(allErrs, ValidateNodeSelector(spec.NodeSelector, specPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, ValidateAffinity(spec.Affinity, specPath.Child("affinity"))...)
	allErrs = append(allErrs, ValidateTolerations(spec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, ValidatePriorityClassName(spec.PriorityClassName, specPath.Child("priorityClassName"))...)
	allErrs = append(allErrs, ValidateSchedulerName(spec.SchedulerName, specPath.Child("schedulerName"))...)
	for i, s := range spec.ImagePullSecrets {
		allErrs = append(allErrs, ValidateObjectName(s.Name, specPath.Child("imagePullSecrets").Index(i).Child("name"))...)
	}
	return allErrs
}

// validateVolumes mirrors ValidateVolumes for the sources a launcher pod uses: unique
// DNS-label names, exactly one source. It returns the volumes by name.
func validateVolumes(volumes []corev1.Volume, path *field.Path) (map[string]*corev1.Volume, field.ErrorList) {
	var allErrs field.ErrorList
	byName := map[string]*corev1.Volume{}
	for i := range volumes {
		v := &volumes[i]
		idx := path.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(v.Name) {
			allErrs = append(allErrs, field.Invalid(idx.Child("name"), v.Name, msg))
		}
		if _, dup := byName[v.Name]; dup {
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), v.Name))
		}
		byName[v.Name] = v
		sources := 0
		if s := v.HostPath; s != nil {
			sources++
			if s.Path == "" {
				allErrs = append(allErrs, field.Required(idx.Child("hostPath", "path"), ""))
			}
		}
		if v.EmptyDir != nil {
			sources++
		}
		if s := v.PersistentVolumeClaim; s != nil {
			sources++
			if s.ClaimName == "" {
				allErrs = append(allErrs, field.Required(idx.Child("persistentVolumeClaim", "claimName"), ""))
			}
		}
		if s := v.Image; s != nil {
			sources++
			if s.Reference == "" {
				allErrs = append(allErrs, field.Required(idx.Child("image", "reference"), ""))
			}
			allErrs = append(allErrs, ValidatePullPolicy(s.PullPolicy, idx.Child("image", "pullPolicy"))...)
		}
		if sources != 1 {
			allErrs = append(allErrs, field.Invalid(idx, v.Name, fmt.Sprintf("must have exactly one of hostPath, emptyDir, persistentVolumeClaim, image, has %d", sources)))
		}
	}
	return byName, allErrs
}

// validateContainer mirrors validateContainerCommon for what a launcher pod's containers
// set: the name, the image, the pull policy, environment names, mounts, devices and resources.
func validateContainer(c *corev1.Container, volumes map[string]*corev1.Volume, names sets.Set[string], path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
		allErrs = append(allErrs, field.Invalid(path.Child("name"), c.Name, msg))
	}
	if names.Has(c.Name) {
		allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
	}
	names.Insert(c.Name)
	allErrs = append(allErrs, ValidateImage(c.Image, path.Child("image"))...)
	if c.ImagePullPolicy == "" {
		allErrs = append(allErrs, field.Required(path.Child("imagePullPolicy"), "")) // defaulted on the way in; the builder sets it
	}
	allErrs = append(allErrs, ValidatePullPolicy(c.ImagePullPolicy, path.Child("imagePullPolicy"))...)
	for i, e := range c.Env {
		for _, msg := range utilvalidation.IsEnvVarName(e.Name) {
			allErrs = append(allErrs, field.Invalid(path.Child("env").Index(i).Child("name"), e.Name, msg))
		}
	}

	// validateVolumeMounts and validateVolumeDevices: each names a volume, paths are unique,
	// a device path is no mount path, a volume is mounted or a device, not both, and only a
	// claim can be a device.
	mountPaths := sets.New[string]()
	mounted := sets.New[string]()
	for i, m := range c.VolumeMounts {
		idx := path.Child("volumeMounts").Index(i)
		if _, ok := volumes[m.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idx.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idx.Child("mountPath"), ""))
		} else if mountPaths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		mounted.Insert(m.Name)
	}
	devicePaths := sets.New[string]()
	for i, d := range c.VolumeDevices {
		idx := path.Child("volumeDevices").Index(i)
		v, ok := volumes[d.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.NotFound(idx.Child("name"), d.Name))
		case v.PersistentVolumeClaim == nil:
			allErrs = append(allErrs, field.Invalid(idx.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim for block mode"))
		}
		if mounted.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(idx.Child("name"), d.Name, "can not be used with volumeMounts"))
		}
		if !strings.HasPrefix(d.DevicePath, "/") {
			allErrs = append(allErrs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "must be an absolute path"))
		}
		if devicePaths.Has(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if mountPaths.Has(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "can not be used by volumeMounts"))
		}
		devicePaths.Insert(d.DevicePath)
	}
	return append(allErrs, validateResources(c.Resources, path.Child("resources"))...)
}

// validateResources mirrors ValidateContainerResourceRequirements: qualified names,
// non-negative quantities, requests at most the limits, and an extended resource (a
// device plugin's) requested exactly as limited, in whole units.
func validateResources(r corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(list corev1.ResourceList, p *field.Path) {
		for name, q := range list {
			for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
				allErrs = append(allErrs, field.Invalid(p.Key(string(name)), name, msg))
			}
			if q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
			if isExtended(name) && q.MilliValue()%1000 != 0 {
				allErrs = append(allErrs, field.Invalid(p.Key(string(name)), q.String(), "must be an integer"))
			}
		}
	}
	check(r.Limits, path.Child("limits"))
	check(r.Requests, path.Child("requests"))
	for name, req := range r.Requests {
		limit, ok := r.Limits[name]
		switch {
		case ok && req.Cmp(limit) > 0:
			allErrs = append(allErrs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case isExtended(name) && (!ok || req.Cmp(limit) != 0):
			allErrs = append(allErrs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be equal to %s limit", name)))
		}
	}
	return allErrs
}

// isExtended: a resource outside kubernetes.io with a domain, such as devices.kubevirt.io/kvm.
func isExtended(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}
