package export

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	kvfake "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
	exportfake "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned/fake"
	exportinformers "github.com/hangarvm/hangar/pkg/generated/export/informers/externalversions"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

const ns = "tenant"

var created = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

type fixture struct {
	c       *Controller
	events  *record.FakeRecorder
	kube    *kubefake.Clientset
	exports *exportfake.Clientset
}

func newFixture(t *testing.T, now time.Time, objs ...runtime.Object) *fixture {
	t.Helper()
	var exportObjs, kvObjs, kubeObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *exportv1beta1.VirtualMachineExport:
			exportObjs = append(exportObjs, o)
		case *v1.VirtualMachine, *v1.VirtualMachineInstance:
			kvObjs = append(kvObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{kube: kubefake.NewSimpleClientset(kubeObjs...), exports: exportfake.NewSimpleClientset(exportObjs...)}
	ef := exportinformers.NewSharedInformerFactory(f.exports, 0)
	kvf := kvinformers.NewSharedInformerFactory(kvfake.NewSimpleClientset(kvObjs...), 0)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	inf := Informers{Exports: ef.Export().V1beta1().VirtualMachineExports(), Pods: kf.Core().V1().Pods(), Services: kf.Core().V1().Services(),
		Claims: kf.Core().V1().PersistentVolumeClaims(), VMs: kvf.Kubevirt().V1().VirtualMachines(), VMIs: kvf.Kubevirt().V1().VirtualMachineInstances()}
	f.events = record.NewFakeRecorder(10)
	c, err := New(Clients{Exports: f.exports, Kube: f.kube}, inf, func() string { return "registry.test/virt-launcher:v1" }, f.events)
	require.NoError(t, err)
	c.now = func() time.Time { return now }
	for _, o := range objs {
		var idx cache.Indexer
		switch o.(type) {
		case *exportv1beta1.VirtualMachineExport:
			idx = inf.Exports.Informer().GetIndexer()
		case *v1.VirtualMachine:
			idx = inf.VMs.Informer().GetIndexer()
		case *v1.VirtualMachineInstance:
			idx = inf.VMIs.Informer().GetIndexer()
		case *corev1.PersistentVolumeClaim:
			idx = inf.Claims.Informer().GetIndexer()
		case *corev1.Pod:
			idx = inf.Pods.Informer().GetIndexer()
		case *corev1.Service:
			idx = inf.Services.Informer().GetIndexer()
		}
		require.NotNil(t, idx, "%T", o)
		require.NoError(t, idx.Add(o))
	}
	f.c = c
	return f
}

func claimExport() *exportv1beta1.VirtualMachineExport {
	return &exportv1beta1.VirtualMachineExport{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns, UID: "export-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec:       exportv1beta1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "dump"}},
	}
}

func vmExport() *exportv1beta1.VirtualMachineExport {
	e := claimExport()
	e.Spec.Source = corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}
	e.Spec.TokenSecretRef = ptr.To("my-token")
	return e
}

func claim(name string, phase corev1.PersistentVolumeClaimPhase, mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func vm() *v1.VirtualMachine {
	return &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1.VirtualMachineSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{Volumes: []v1.Volume{
			{Name: "root", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-root"}}}},
			{Name: "data", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "db-data"}}},
			{Name: "cloudinit", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
		}}}}}
}

func vmi(name, claimName string, phase v1.VirtualMachineInstancePhase) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.VirtualMachineInstanceSpec{Volumes: []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}}},
		Status: v1.VirtualMachineInstanceStatus{Phase: phase}}
}

func readyPod(e *exportv1beta1.VirtualMachineExport, volumes []launcherpod.ExportVolume) *corev1.Pod {
	token := "export-token-e"
	if e.Spec.TokenSecretRef != nil {
		token = *e.Spec.TokenSecretRef
	}
	p := launcherpod.ExportServerPod(ns, e.Name, ownerRef(e.Name, e), volumes, "virt-export-e-tls", token, "img", created.Add(2*time.Hour))
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func service(e *exportv1beta1.VirtualMachineExport) *corev1.Service {
	return launcherpod.ExportService(ns, e.Name, ownerRef(e.Name, e), map[string]string{CertificateAnnotation: "PEM"})
}

func (f *fixture) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.exports.Actions()...) {
		switch a.GetVerb() {
		case "create":
			m, _ := a.(k8stesting.CreateAction).GetObject().(metav1.Object)
			out = append(out, "create "+a.GetResource().Resource+" "+m.GetName())
		case "delete":
			out = append(out, "delete "+a.GetResource().Resource+" "+a.(k8stesting.DeleteAction).GetName())
		case "update":
			m, _ := a.(k8stesting.UpdateAction).GetObject().(metav1.Object)
			out = append(out, "update "+a.GetResource().Resource+"/"+a.GetSubresource()+" "+m.GetName())
		}
	}
	return out
}

func (f *fixture) status(t *testing.T) exportv1beta1.VirtualMachineExportStatus {
	e, err := f.exports.ExportV1beta1().VirtualMachineExports(ns).Get(context.Background(), "e", metav1.GetOptions{})
	require.NoError(t, err)
	return e.Status
}

func cond(st exportv1beta1.VirtualMachineExportStatus, t snapshotv1beta1.ConditionType) string {
	if c := snapshotv1beta1.FindCondition(st.Conditions, t); c != nil {
		return string(c.Status) + " " + c.Reason
	}
	return ""
}

func TestSync(t *testing.T) {
	archive := []launcherpod.ExportVolume{{Name: "dump", Claim: "dump", Kind: launcherpod.ExportArchive}}
	tests := []struct {
		name   string
		export *exportv1beta1.VirtualMachineExport
		objs   []runtime.Object
		writes []string
		phase  exportv1beta1.VirtualMachineExportPhase
		ready  string // "Status reason" of the Ready condition
		pvc    string // and of PVCReady, when the case says
		links  []string
	}{
		{name: "a claim that does not exist: pending, no server", export: claimExport(),
			writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Pending, ready: "False pvcNotFound"},
		{name: "a claim not bound yet: its server is its first consumer", export: claimExport(), objs: []runtime.Object{claim("dump", corev1.ClaimPending)},
			writes: []string{"create secrets export-token-e", "delete secrets virt-export-e-tls", "create secrets virt-export-e-tls",
				"create services virt-export-e", "create pods virt-export-e", "update virtualmachineexports/status e"},
			phase: exportv1beta1.Pending, ready: "False podPending", pvc: "False pvcPending"},
		{name: "a bound claim: token, key pair, Service and pod made", export: claimExport(), objs: []runtime.Object{claim("dump", corev1.ClaimBound)},
			writes: []string{"create secrets export-token-e", "delete secrets virt-export-e-tls", "create secrets virt-export-e-tls",
				"create services virt-export-e", "create pods virt-export-e", "update virtualmachineexports/status e"},
			phase: exportv1beta1.Pending, ready: "False podPending", pvc: "True pvcBound"},
		{name: "its server ready: the links of an archive", export: claimExport(),
			objs:   []runtime.Object{claim("dump", corev1.ClaimBound), service(claimExport()), readyPod(claimExport(), archive)},
			writes: []string{"create secrets export-token-e", "update virtualmachineexports/status e"}, phase: exportv1beta1.Ready, ready: "True podReady",
			links: []string{"dump dir https://virt-export-e.tenant.svc/volumes/dump/dir", "dump tar.gz https://virt-export-e.tenant.svc/volumes/dump/disk.tar.gz"}},
		{name: "a claim CDI filled with a disk: raw and gzip links", export: claimExport(),
			objs: []runtime.Object{claim("dump", corev1.ClaimBound, func(c *corev1.PersistentVolumeClaim) {
				c.Annotations = map[string]string{contentTypeAnnotation: "kubevirt"}
			}), service(claimExport()), readyPod(claimExport(), []launcherpod.ExportVolume{{Name: "dump", Claim: "dump", Kind: launcherpod.ExportKubeVirt}})},
			writes: []string{"create secrets export-token-e", "update virtualmachineexports/status e"}, phase: exportv1beta1.Ready, ready: "True podReady",
			links: []string{"dump raw https://virt-export-e.tenant.svc/volumes/dump/disk.img", "dump gzip https://virt-export-e.tenant.svc/volumes/dump/disk.img.gz"}},
		{name: "a pod serving other volumes is made again", export: claimExport(),
			objs: []runtime.Object{claim("dump", corev1.ClaimBound, func(c *corev1.PersistentVolumeClaim) {
				c.Annotations = map[string]string{contentTypeAnnotation: "kubevirt"}
			}), service(claimExport()), readyPod(claimExport(), []launcherpod.ExportVolume{{Name: "dump", Claim: "other", Kind: launcherpod.ExportKubeVirt}})},
			writes: []string{"create secrets export-token-e", "delete pods virt-export-e", "update virtualmachineexports/status e"},
			phase:  exportv1beta1.Pending, ready: "False podPending"},
		{name: "a claim a running instance uses: its server goes", export: claimExport(),
			objs:   []runtime.Object{claim("dump", corev1.ClaimBound), vmi("other-vm", "dump", v1.Running), service(claimExport()), readyPod(claimExport(), archive)},
			writes: []string{"delete pods virt-export-e", "update virtualmachineexports/status e"}, phase: exportv1beta1.Pending, ready: "False inUse"},
		{name: "a claim a finished instance used is free", export: claimExport(),
			objs:   []runtime.Object{claim("dump", corev1.ClaimBound), vmi("other-vm", "dump", v1.Succeeded), service(claimExport()), readyPod(claimExport(), archive)},
			writes: []string{"create secrets export-token-e", "update virtualmachineexports/status e"}, phase: exportv1beta1.Ready, ready: "True podReady",
			links: []string{"dump dir https://virt-export-e.tenant.svc/volumes/dump/dir", "dump tar.gz https://virt-export-e.tenant.svc/volumes/dump/disk.tar.gz"}},
		{name: "a claim a running instance dumped its memory to is free once the dump ended", export: claimExport(),
			objs: []runtime.Object{claim("dump", corev1.ClaimBound), func() *v1.VirtualMachineInstance {
				i := vmi("other-vm", "root", v1.Running)
				i.Spec.Volumes = append(i.Spec.Volumes, v1.Volume{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
					PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump"}}}}})
				i.Status.VolumeStatus = []v1.VolumeStatus{{Name: "dump", Phase: v1.MemoryDumpVolumeCompleted}}
				return i
			}(), service(claimExport()), readyPod(claimExport(), archive)},
			writes: []string{"create secrets export-token-e", "update virtualmachineexports/status e"}, phase: exportv1beta1.Ready, ready: "True podReady",
			links: []string{"dump dir https://virt-export-e.tenant.svc/volumes/dump/dir", "dump tar.gz https://virt-export-e.tenant.svc/volumes/dump/disk.tar.gz"}},
		{name: "a claim a memory dump is being written to is in use", export: claimExport(),
			objs: []runtime.Object{claim("dump", corev1.ClaimBound), func() *v1.VirtualMachineInstance {
				i := vmi("other-vm", "root", v1.Running)
				i.Spec.Volumes = append(i.Spec.Volumes, v1.Volume{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
					PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump"}}}}})
				i.Status.VolumeStatus = []v1.VolumeStatus{{Name: "dump", Phase: v1.MemoryDumpVolumeInProgress}}
				return i
			}()},
			writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Pending, ready: "False inUse"},
		{name: "a VM that does not exist", export: vmExport(),
			writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Pending, ready: "False vmNotFound"},
		{name: "a running VM", export: vmExport(), objs: []runtime.Object{vm(), vmi("db", "db-root", v1.Running)},
			writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Pending, ready: "False inUse"},
		{name: "a VM without claims: skipped", export: vmExport(), objs: []runtime.Object{func() *v1.VirtualMachine {
			m := vm()
			m.Spec.Template.Spec.Volumes = m.Spec.Template.Spec.Volumes[2:]
			return m
		}()}, writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Skipped, ready: "False noVolumes"},
		{name: "a stopped VM: its claims and DataVolumes, with the named token", export: vmExport(),
			objs: []runtime.Object{vm(), claim("db-root", corev1.ClaimBound), claim("db-data", corev1.ClaimBound, func(c *corev1.PersistentVolumeClaim) {
				c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
			}), service(vmExport()), func() *corev1.Pod {
				p := readyPod(vmExport(), []launcherpod.ExportVolume{{Name: "root", Claim: "db-root", Kind: launcherpod.ExportKubeVirt},
					{Name: "data", Claim: "db-data", Kind: launcherpod.ExportBlock}})
				return p
			}()},
			writes: []string{"update virtualmachineexports/status e"}, phase: exportv1beta1.Ready, ready: "True podReady",
			links: []string{"data raw https://virt-export-e.tenant.svc/volumes/data/disk.img", "data gzip https://virt-export-e.tenant.svc/volumes/data/disk.img.gz",
				"root raw https://virt-export-e.tenant.svc/volumes/root/disk.img", "root gzip https://virt-export-e.tenant.svc/volumes/root/disk.img.gz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, created.Add(time.Minute), append(tt.objs, tt.export)...)
			err := f.c.sync(context.Background(), ns+"/e")
			var requeue controllerutil.RequeueAfter
			require.True(t, errors.As(err, &requeue), "sync: %v", err)
			assert.Equal(t, 2*time.Hour-time.Minute, time.Duration(requeue), "looked at again when its time is up")
			assert.Equal(t, tt.writes, f.writes())
			st := f.status(t)
			assert.Equal(t, tt.phase, st.Phase)
			assert.Equal(t, tt.ready, cond(st, exportv1beta1.ConditionReady))
			if tt.pvc != "" {
				assert.Equal(t, tt.pvc, cond(st, exportv1beta1.ConditionPVC))
			}
			require.NotNil(t, st.TTLExpirationTime)
			assert.Equal(t, created.Add(2*time.Hour), st.TTLExpirationTime.UTC())
			var links []string
			if st.Links != nil {
				require.NotNil(t, st.Links.Internal)
				assert.Equal(t, "PEM", st.Links.Internal.Cert)
				for _, v := range st.Links.Internal.Volumes {
					for _, fm := range v.Formats {
						links = append(links, v.Name+" "+string(fm.Format)+" "+fm.Url)
					}
				}
			}
			assert.Equal(t, tt.links, links)
		})
	}
}

// TestServerObjects: what a first sync makes for a bound claim, as the server expects it.
func TestServerObjects(t *testing.T) {
	e := claimExport()
	e.Spec.TTLDuration = &metav1.Duration{Duration: time.Hour}
	f := newFixture(t, created.Add(time.Minute), e, claim("dump", corev1.ClaimBound))
	err := f.c.sync(context.Background(), ns+"/e")
	var requeue controllerutil.RequeueAfter
	require.True(t, errors.As(err, &requeue), "sync: %v", err)
	ctx := context.Background()

	token, err := f.kube.CoreV1().Secrets(ns).Get(ctx, "export-token-e", metav1.GetOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(token.StringData["token"]), 20, "a long random token")
	assert.True(t, metav1.IsControlledBy(token, e))
	assert.Equal(t, ptr.To("export-token-e"), f.status(t).TokenSecretRef)

	tls, err := f.kube.CoreV1().Secrets(ns).Get(ctx, "virt-export-e-tls", metav1.GetOptions{})
	require.NoError(t, err)
	svc, err := f.kube.CoreV1().Services(ns).Get(ctx, "virt-export-e", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(tls.Data[corev1.TLSCertKey]), svc.Annotations[CertificateAnnotation], "the Service records the Secret's certificate")
	block, _ := pem.Decode(tls.Data[corev1.TLSCertKey])
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Contains(t, cert.DNSNames, "virt-export-e.tenant.svc")
	assert.Equal(t, created.Add(2*time.Hour), cert.NotAfter.UTC(), "it dies an hour after the export")
	assert.Equal(t, int32(8443), svc.Spec.Ports[0].TargetPort.IntVal)
	assert.Equal(t, int32(443), svc.Spec.Ports[0].Port)

	pod, err := f.kube.CoreV1().Pods(ns).Get(ctx, "virt-export-e", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, metav1.IsControlledBy(pod, e))
	assert.Equal(t, svc.Spec.Selector, pod.Labels)
	ctr := pod.Spec.Containers[0]
	assert.Equal(t, "registry.test/virt-launcher:v1", ctr.Image)
	assert.Equal(t, []string{launcherpod.ExportServerImagePath, "-listen=:8443", "-cert=/etc/export/tls/tls.crt", "-key=/etc/export/tls/tls.key",
		"-token-file=/etc/export/token/token", "-expires=2026-11-29T07:00:00Z", "-volume=dump=archive:/export/dump"}, ctr.Command)
	assert.Equal(t, ptr.To(true), pod.Spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, ptr.To(false), pod.Spec.AutomountServiceAccountToken)
	var claimVolume *corev1.PersistentVolumeClaimVolumeSource
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claimVolume = v.PersistentVolumeClaim
		}
	}
	require.NotNil(t, claimVolume)
	assert.Equal(t, corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump", ReadOnly: true}, *claimVolume, "mounted read-only")
}

// TestExpiredExportIsDeleted: an export whose time is up is deleted, and with it (by the
// garbage collector) what it owns.
func TestExpiredExportIsDeleted(t *testing.T) {
	f := newFixture(t, created.Add(2*time.Hour), claimExport(), claim("dump", corev1.ClaimBound))
	require.NoError(t, f.c.sync(context.Background(), ns+"/e"))
	assert.Equal(t, []string{"delete virtualmachineexports e"}, f.writes())
}

// TestEventsOnReadyChanges: an event says each change of the Ready condition's reason, once.
func TestEventsOnReadyChanges(t *testing.T) {
	running := vmi("other-vm", "dump", v1.Running)
	f := newFixture(t, created.Add(time.Minute), claimExport(), claim("dump", corev1.ClaimBound), running)
	err := f.c.sync(context.Background(), ns+"/e")
	var requeue controllerutil.RequeueAfter
	require.True(t, errors.As(err, &requeue), "sync: %v", err)
	require.Len(t, f.events.Events, 1)
	assert.Equal(t, "Warning inUse PersistentVolumeClaim dump is in use by VirtualMachineInstance other-vm", <-f.events.Events)

	// The same reason again (the status as written): no second event.
	e := claimExport()
	e.Status = f.status(t)
	f = newFixture(t, created.Add(2*time.Minute), e, claim("dump", corev1.ClaimBound), running)
	err = f.c.sync(context.Background(), ns+"/e")
	require.True(t, errors.As(err, &requeue), "sync: %v", err)
	assert.Empty(t, f.events.Events)
}
