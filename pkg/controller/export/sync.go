package export

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/exportserver"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// CertificateAnnotation on an export's Service holds the PEM certificate of its server: the
// Service is the controller's record of the key pair in the TLS Secret, which the controller
// may create but not read.
const CertificateAnnotation = "export.kubevirt.io/certificate"

// Annotations and owners that say a claim holds a KubeVirt disk image, as KubeVirt decides it.
const contentTypeAnnotation = "cdi.kubevirt.io/storage.contentType"

// The reasons of the conditions, KubeVirt's where it has them.
const (
	reasonPodReady      = "podReady"
	reasonPodPending    = "podPending"
	reasonInUse         = "inUse"
	reasonClaimBound    = "pvcBound"
	reasonClaimPending  = "pvcPending"
	reasonClaimNotFound = "pvcNotFound"
	reasonVMNotFound    = "vmNotFound"
	reasonNoVolumes     = "noVolumes"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	e, err := c.exports.VirtualMachineExports(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && e.DeletionTimestamp != nil) {
		return nil // what it owns goes with it
	}
	if err != nil {
		return err
	}
	now := c.now()
	expires := expiry(e)
	if !now.Before(expires) {
		// KubeVirt deletes an export whose time is up; the server refuses by then anyway.
		err := c.clients.Exports.ExportV1beta1().VirtualMachineExports(ns).Delete(ctx, name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &e.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}

	status := e.Status.DeepCopy()
	status.TTLExpirationTime = &metav1.Time{Time: expires}
	if e.Spec.Source.Kind == "VirtualMachine" {
		status.VirtualMachineName = ptr.To(e.Spec.Source.Name)
	}
	if err := c.serve(ctx, e, status, now, expires); err != nil {
		return err
	}
	c.recordReadyChange(e, status)
	if !apiequality.Semantic.DeepEqual(status, &e.Status) {
		updated := e.DeepCopy()
		updated.Status = *status
		if _, err := c.clients.Exports.ExportV1beta1().VirtualMachineExports(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return controllerutil.RequeueAfter(expires.Sub(now))
}

// recordReadyChange records an event when the reason of e's Ready condition changes: what
// `kubectl describe vmexport` shows of its life (server starting, ready, waiting on a running
// VM or a missing source).
func (c *Controller) recordReadyChange(e *exportv1beta1.VirtualMachineExport, status *exportv1beta1.VirtualMachineExportStatus) {
	now := snapshotv1beta1.FindCondition(status.Conditions, exportv1beta1.ConditionReady)
	before := snapshotv1beta1.FindCondition(e.Status.Conditions, exportv1beta1.ConditionReady)
	if now == nil || (before != nil && before.Reason == now.Reason) {
		return
	}
	kind := corev1.EventTypeNormal
	switch now.Reason {
	case reasonInUse, reasonClaimNotFound, reasonVMNotFound:
		kind = corev1.EventTypeWarning
	}
	message := now.Message
	if message == "" {
		message = fmt.Sprintf("export %s is %s", e.Name, status.Phase)
	}
	c.recorder.Event(e, kind, now.Reason, message)
}

// expiry is when e's time is up: its creation and its TTL (2h when it names none).
func expiry(e *exportv1beta1.VirtualMachineExport) time.Time {
	ttl := exportv1beta1.DefaultDurationTTL
	if e.Spec.TTLDuration != nil {
		ttl = e.Spec.TTLDuration.Duration
	}
	return e.CreationTimestamp.Add(ttl)
}

// serve brings e's server to where its source allows and writes what it found into status.
func (c *Controller) serve(ctx context.Context, e *exportv1beta1.VirtualMachineExport, status *exportv1beta1.VirtualMachineExportStatus, now, expires time.Time) error {
	volumes, unbound, blocked := c.volumes(e)
	if blocked != nil {
		setPending(status, blocked, now)
		return c.stopServer(ctx, e)
	}
	if len(volumes) == 0 {
		status.Phase = exportv1beta1.Skipped
		status.Links = nil
		setCondition(status, exportv1beta1.ConditionReady, corev1.ConditionFalse, reasonNoVolumes,
			fmt.Sprintf("VirtualMachine %s has no claim to export", e.Spec.Source.Name), now)
		return c.stopServer(ctx, e)
	}
	if len(unbound) > 0 {
		setCondition(status, exportv1beta1.ConditionPVC, corev1.ConditionFalse, reasonClaimPending,
			fmt.Sprintf("PersistentVolumeClaim %s is not bound yet", strings.Join(unbound, ", ")), now)
	} else {
		setCondition(status, exportv1beta1.ConditionPVC, corev1.ConditionTrue, reasonClaimBound, "", now)
	}

	token, err := c.tokenSecret(ctx, e, status)
	if err != nil {
		return err
	}
	cert, err := c.service(ctx, e, now, expires)
	if err != nil {
		return err
	}
	pod, err := c.serverPod(ctx, e, volumes, token, expires)
	if err != nil {
		return err
	}
	status.ServiceName = launcherpod.ExportServerName(e.Name)
	if !podReady(pod) {
		status.Phase = exportv1beta1.Pending
		status.Links = nil
		setCondition(status, exportv1beta1.ConditionReady, corev1.ConditionFalse, reasonPodPending, "the export server is starting", now)
		return nil
	}
	status.Phase = exportv1beta1.Ready
	status.Links = &exportv1beta1.VirtualMachineExportLinks{Internal: links(e, volumes, cert)}
	setCondition(status, exportv1beta1.ConditionReady, corev1.ConditionTrue, reasonPodReady, "", now)
	return nil
}

// blocker is why an export cannot serve now.
type blocker struct {
	condition snapshotv1beta1.ConditionType
	reason    string
	message   string
}

func setPending(status *exportv1beta1.VirtualMachineExportStatus, b *blocker, now time.Time) {
	status.Phase = exportv1beta1.Pending
	status.Links = nil
	if b.condition == exportv1beta1.ConditionPVC {
		setCondition(status, exportv1beta1.ConditionPVC, corev1.ConditionFalse, b.reason, b.message, now)
	}
	setCondition(status, exportv1beta1.ConditionReady, corev1.ConditionFalse, b.reason, b.message, now)
}

// volumes are the claims e serves and those of them not bound yet, or why it cannot serve them
// now: a missing source or claim, a claim a running instance uses (its data would change under
// the download).
func (c *Controller) volumes(e *exportv1beta1.VirtualMachineExport) ([]launcherpod.ExportVolume, []string, *blocker) {
	ns := e.Namespace
	var unbound []string
	var wanted []launcherpod.ExportVolume
	if e.Spec.Source.Kind == "VirtualMachine" {
		vm, err := c.vms.VirtualMachines(ns).Get(e.Spec.Source.Name)
		if err != nil {
			return nil, nil, &blocker{exportv1beta1.ConditionReady, reasonVMNotFound, fmt.Sprintf("VirtualMachine %s not found", e.Spec.Source.Name)}
		}
		if vmi, err := c.vmis.VirtualMachineInstances(ns).Get(vm.Name); err == nil && !vmi.IsFinal() {
			return nil, nil, &blocker{exportv1beta1.ConditionReady, reasonInUse,
				fmt.Sprintf("VirtualMachine %s is running: stop it to export its disks", vm.Name)}
		}
		if vm.Spec.Template != nil {
			for _, v := range vm.Spec.Template.Spec.Volumes {
				switch claim := v.ClaimSource(); {
				case claim != nil:
					wanted = append(wanted, launcherpod.ExportVolume{Name: v.Name, Claim: claim.ClaimName, Kind: launcherpod.ExportKubeVirt})
				case v.MemoryDump != nil:
					wanted = append(wanted, launcherpod.ExportVolume{Name: v.Name, Claim: v.MemoryDump.ClaimName, Kind: launcherpod.ExportArchive})
				}
			}
		}
	} else {
		wanted = []launcherpod.ExportVolume{{Name: e.Spec.Source.Name, Claim: e.Spec.Source.Name}}
	}
	users := c.claimUsers(ns)
	for i := range wanted {
		v := &wanted[i]
		claim, err := c.claims.PersistentVolumeClaims(ns).Get(v.Claim)
		if err != nil {
			return nil, nil, &blocker{exportv1beta1.ConditionPVC, reasonClaimNotFound, fmt.Sprintf("PersistentVolumeClaim %s not found", v.Claim)}
		}
		if claim.Status.Phase != corev1.ClaimBound {
			// Not a blocker: with a WaitForFirstConsumer class the server pod binds it.
			unbound = append(unbound, v.Claim)
		}
		if user, ok := users[v.Claim]; ok {
			return nil, nil, &blocker{exportv1beta1.ConditionReady, reasonInUse,
				fmt.Sprintf("PersistentVolumeClaim %s is in use by VirtualMachineInstance %s", v.Claim, user)}
		}
		v.Kind = contentKind(claim, v.Kind)
	}
	return wanted, unbound, nil
}

// claimUsers maps the claims of ns's live instances to an instance using each.
func (c *Controller) claimUsers(ns string) map[string]string {
	users := map[string]string{}
	vmis, err := c.vmis.VirtualMachineInstances(ns).List(labels.Everything())
	if err != nil {
		return users
	}
	for _, vmi := range vmis {
		if vmi.IsFinal() {
			continue
		}
		// A memory dump that has ended leaves its volume in the instance until it is removed,
		// but nothing mounts its claim any more: it may be exported (downloaded).
		dumped := map[string]bool{}
		for _, vs := range vmi.Status.VolumeStatus {
			if vs.Phase == v1.MemoryDumpVolumeCompleted || vs.Phase == v1.MemoryDumpVolumeFailed {
				dumped[vs.Name] = true
			}
		}
		for _, v := range vmi.Spec.Volumes {
			switch claim := v.ClaimSource(); {
			case claim != nil:
				users[claim.ClaimName] = vmi.Name
			case v.MemoryDump != nil && !dumped[v.Name]:
				users[v.MemoryDump.ClaimName] = vmi.Name
			}
		}
	}
	return users
}

// contentKind is how claim is served: a block claim as its device; a claim the VM uses as a
// disk (kind already kubevirt), one CDI filled with a disk image or a DataVolume's as its
// disk.img; any other claim's files as an archive, as KubeVirt decides.
func contentKind(claim *corev1.PersistentVolumeClaim, kind exportserver.Kind) exportserver.Kind {
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return launcherpod.ExportBlock
	}
	if kind != "" {
		return kind
	}
	if t, ok := claim.Annotations[contentTypeAnnotation]; ok && (t == "" || t == "kubevirt") {
		return launcherpod.ExportKubeVirt
	}
	if ref := metav1.GetControllerOf(claim); ref != nil && ref.Kind == "DataVolume" {
		return launcherpod.ExportKubeVirt
	}
	return launcherpod.ExportArchive
}

// tokenSecret is the Secret holding e's token: the spec's, or one made for it (owned by it,
// named export-token-<name>, as KubeVirt names it), recorded in status.
func (c *Controller) tokenSecret(ctx context.Context, e *exportv1beta1.VirtualMachineExport, status *exportv1beta1.VirtualMachineExportStatus) (string, error) {
	if e.Spec.TokenSecretRef != nil {
		status.TokenSecretRef = ptr.To(*e.Spec.TokenSecretRef)
		return *e.Spec.TokenSecretRef, nil
	}
	name := "export-token-" + e.Name
	if status.TokenSecretRef != nil && *status.TokenSecretRef == name {
		return name, nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace, Labels: launcherpod.ExportServerLabels(e.Name),
			OwnerReferences: []metav1.OwnerReference{ownerRef(e.Name, e)}},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"token": rand.Text()},
	}
	_, err := c.clients.Kube.CoreV1().Secrets(e.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create token Secret %s/%s: %w", e.Namespace, name, err)
	}
	status.TokenSecretRef = &name
	return name, nil
}

// tlsSecretName names the Secret holding e's server key pair.
func tlsSecretName(e *exportv1beta1.VirtualMachineExport) string {
	return launcherpod.ExportServerName(e.Name) + "-tls"
}

// service makes sure e's Service exists and returns its server's certificate. A Service
// without one (or none) gets a new key pair: the TLS Secret is made again first, then the
// Service that records its certificate, then the pod (made again too: it holds the old pair).
func (c *Controller) service(ctx context.Context, e *exportv1beta1.VirtualMachineExport, now, expires time.Time) (string, error) {
	name := launcherpod.ExportServerName(e.Name)
	svc, err := c.services.Services(e.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The cache may not have seen the Service this controller made a moment ago: a new
		// key pair now would take the pod down for nothing.
		svc, err = c.clients.Kube.CoreV1().Services(e.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err == nil {
		if cert := svc.Annotations[CertificateAnnotation]; cert != "" && metav1.IsControlledBy(svc, e) {
			return cert, nil
		}
		if err := c.clients.Kube.CoreV1().Services(e.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
	}
	certPEM, keyPEM, err := serverCertificate(name, e.Namespace, now, expires)
	if err != nil {
		return "", err
	}
	secrets := c.clients.Kube.CoreV1().Secrets(e.Namespace)
	if err := secrets.Delete(ctx, tlsSecretName(e), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete the old TLS Secret of export %s/%s: %w", e.Namespace, e.Name, err)
	}
	owner := ownerRef(e.Name, e)
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tlsSecretName(e), Namespace: e.Namespace, Labels: launcherpod.ExportServerLabels(e.Name),
			OwnerReferences: []metav1.OwnerReference{owner}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create the TLS Secret of export %s/%s: %w", e.Namespace, e.Name, err)
	}
	// The pod that holds the old pair goes; the next sync makes it again.
	if err := c.stopServer(ctx, e); err != nil {
		return "", err
	}
	svc = launcherpod.ExportService(e.Namespace, e.Name, owner, map[string]string{CertificateAnnotation: string(certPEM)})
	if _, err := c.clients.Kube.CoreV1().Services(e.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create the Service of export %s/%s: %w", e.Namespace, e.Name, err)
	}
	return string(certPEM), nil
}

// serverPod returns e's server pod, made when missing or when it no longer serves what e
// asks (a VM's volumes changed) or has ended.
func (c *Controller) serverPod(ctx context.Context, e *exportv1beta1.VirtualMachineExport, volumes []launcherpod.ExportVolume, token string, expires time.Time) (*corev1.Pod, error) {
	want := launcherpod.ExportServerPod(e.Namespace, e.Name, ownerRef(e.Name, e), volumes, tlsSecretName(e), token, c.image(), expires)
	pod, err := c.pods.Pods(e.Namespace).Get(want.Name)
	if err == nil {
		ended := pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
		if metav1.IsControlledBy(pod, e) && !ended && sameServer(pod, want) {
			return pod, nil
		}
		return nil, c.stopServer(ctx, e) // the deletion brings the next sync
	}
	created, err := c.clients.Kube.CoreV1().Pods(e.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil // the informer has not seen it yet
	}
	if err != nil {
		return nil, fmt.Errorf("create the server pod of export %s/%s: %w", e.Namespace, e.Name, err)
	}
	return created, nil
}

// sameServer is true when pod serves what want would: the same command line (volumes, kinds,
// expiry) from the same claims and Secrets. The API server defaults the rest of the spec.
func sameServer(pod, want *corev1.Pod) bool {
	sources := func(p *corev1.Pod) []string {
		var out []string
		for _, v := range p.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				out = append(out, v.Name+"=claim:"+v.PersistentVolumeClaim.ClaimName)
			case v.Secret != nil:
				out = append(out, v.Name+"=secret:"+v.Secret.SecretName)
			}
		}
		return out
	}
	return len(pod.Spec.Containers) == 1 && apiequality.Semantic.DeepEqual(pod.Spec.Containers[0].Command, want.Spec.Containers[0].Command) &&
		apiequality.Semantic.DeepEqual(sources(pod), sources(want))
}

// stopServer deletes e's server pod, if any.
func (c *Controller) stopServer(ctx context.Context, e *exportv1beta1.VirtualMachineExport) error {
	name := launcherpod.ExportServerName(e.Name)
	if _, err := c.pods.Pods(e.Namespace).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.clients.Kube.CoreV1().Pods(e.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the server pod of export %s/%s: %w", e.Namespace, e.Name, err)
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	if pod == nil || pod.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// links are the URLs of volumes behind e's Service, KubeVirt's layout: a disk raw and gzipped,
// any other claim as a directory listing and a tarball.
func links(e *exportv1beta1.VirtualMachineExport, volumes []launcherpod.ExportVolume, cert string) *exportv1beta1.VirtualMachineExportLink {
	base := fmt.Sprintf("https://%s.%s.svc/volumes/", launcherpod.ExportServerName(e.Name), e.Namespace)
	link := &exportv1beta1.VirtualMachineExportLink{Cert: cert}
	for _, v := range volumes {
		url := base + v.Name + "/"
		var formats []exportv1beta1.VirtualMachineExportVolumeFormat
		if v.Kind == launcherpod.ExportArchive {
			formats = []exportv1beta1.VirtualMachineExportVolumeFormat{
				{Format: exportv1beta1.Dir, Url: url + "dir"}, {Format: exportv1beta1.ArchiveGz, Url: url + "disk.tar.gz"}}
		} else {
			formats = []exportv1beta1.VirtualMachineExportVolumeFormat{
				{Format: exportv1beta1.KubeVirtRaw, Url: url + "disk.img"}, {Format: exportv1beta1.KubeVirtGz, Url: url + "disk.img.gz"}}
		}
		link.Volumes = append(link.Volumes, exportv1beta1.VirtualMachineExportVolume{Name: v.Name, Formats: formats})
	}
	sort.Slice(link.Volumes, func(i, j int) bool { return link.Volumes[i].Name < link.Volumes[j].Name })
	return link
}

func setCondition(status *exportv1beta1.VirtualMachineExportStatus, t snapshotv1beta1.ConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) {
	status.Conditions = snapshotv1beta1.SetCondition(status.Conditions, t, s, reason, message, metav1.Time{Time: now})
}
