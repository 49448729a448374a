package virtualmachine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	kubevirtinstall "github.com/hangarvm/hangar/pkg/apis/kubevirt/install"
	"github.com/hangarvm/hangar/pkg/instancetype/infer"
)

// cluster serves the objects of the tests, each with the labels {a: b}, and counts reads by
// kind.
type cluster struct{ reads map[string]int }

func (c *cluster) read(kind, namespace, name string) metav1.ObjectMeta {
	c.reads[kind]++
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"a": "b"}}
}

func (c *cluster) claim(_ context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return &corev1.PersistentVolumeClaim{ObjectMeta: c.read("claim", namespace, name)}, nil
}

func (c *cluster) DataVolume(_ context.Context, namespace, name string) (*cdi.DataVolume, error) {
	return &cdi.DataVolume{ObjectMeta: c.read("DataVolume", namespace, name)}, nil
}

func (c *cluster) DataSource(_ context.Context, namespace, name string) (*cdi.DataSource, error) {
	return &cdi.DataSource{ObjectMeta: c.read("DataSource", namespace, name)}, nil
}

func (c *cluster) SnapshotLabels(_ context.Context, namespace, name string) (map[string]string, error) {
	return c.read("VolumeSnapshot", namespace, name).Labels, nil
}

// labelsOf reads an object of a kind through r, for the tests of every kind alike.
func labelsOf(ctx context.Context, r infer.Reader, kind string, path *field.Path, namespace, name string) (map[string]string, error) {
	switch kind {
	case "claim":
		return r.ClaimLabels(ctx, path, namespace, name)
	case "VolumeSnapshot":
		return r.SnapshotLabels(ctx, path, namespace, name)
	case "DataVolume":
		dv, err := r.DataVolume(ctx, path, namespace, name)
		if err != nil {
			return nil, err
		}
		return dv.Labels, nil
	default:
		ds, err := r.DataSource(ctx, path, namespace, name)
		if err != nil {
			return nil, err
		}
		return ds.Labels, nil
	}
}

// TestSourcesAsUser: an object behind a volume is read for the user who may get it, and not
// read at all for one who may not (403 naming the field and the right).
func TestSourcesAsUser(t *testing.T) {
	path := field.NewPath("spec", "instancetype", "inferFromVolume")
	for _, kind := range []struct {
		name, group, resource, right string
	}{
		{name: "claim", resource: "persistentvolumeclaims", right: "persistentvolumeclaims"},
		{name: "DataVolume", group: "cdi.kubevirt.io", resource: "datavolumes", right: "datavolumes.cdi.kubevirt.io"},
		{name: "DataSource", group: "cdi.kubevirt.io", resource: "datasources", right: "datasources.cdi.kubevirt.io"},
		{name: "VolumeSnapshot", group: "snapshot.storage.k8s.io", resource: "volumesnapshots", right: "volumesnapshots.snapshot.storage.k8s.io"},
	} {
		// alice may get the object root of the kind in ns, and nothing else.
		mayGet := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			if a.GetUser().GetName() == "alice" && a.GetVerb() == "get" && a.GetResource() == kind.resource &&
				a.GetAPIGroup() == kind.group && a.GetNamespace() == "ns" && a.GetName() == "root" && a.IsResourceRequest() {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "no binding", nil
		})
		for _, tc := range []struct {
			name       string
			user       string
			namespace  string
			authorizer authorizer.Authorizer
			standalone bool
			wantReads  int
			check      func(t *testing.T, err error)
		}{
			{name: "a user who may get it", user: "alice", authorizer: mayGet, wantReads: 1},
			{name: "a user who may not: nothing read", user: "mallory", authorizer: mayGet, check: func(t *testing.T, err error) {
				assert.True(t, apierrors.IsForbidden(err), "got %v", err)
				assert.Contains(t, err.Error(), "spec.instancetype.inferFromVolume")
				assert.Contains(t, err.Error(), "inferring from the "+kind.name+" root needs to read it")
				assert.Contains(t, err.Error(), `user "mallory" may not get `+kind.right+` in namespace "ns" (no binding)`)
			}},
			{name: "the user's right is asked of the object's namespace", user: "alice", namespace: "os-images", authorizer: mayGet,
				check: func(t *testing.T, err error) {
					assert.True(t, apierrors.IsForbidden(err), "got %v", err)
					assert.Contains(t, err.Error(), `may not get `+kind.right+` in namespace "os-images"`)
				}},
			{name: "no authorizer: every client an admin", user: "mallory", wantReads: 1},
			{name: "nothing to read (standalone)", user: "alice", authorizer: mayGet, standalone: true, check: func(t *testing.T, err error) {
				fieldErr, ok := err.(*field.Error)
				require.True(t, ok, "the VM's error, got %v", err)
				assert.Equal(t, path.String(), fieldErr.Field)
				assert.Contains(t, fieldErr.Detail, "this virt-api cannot read")
			}},
		} {
			t.Run(kind.name+": "+tc.name, func(t *testing.T) {
				c := &cluster{reads: map[string]int{}}
				s := sourcesAsUser{authorizer: tc.authorizer, claims: c.claim, sources: c, vm: "vm1"}
				if tc.standalone {
					s.claims, s.sources = nil, nil
				}
				ns := "ns"
				if tc.namespace != "" {
					ns = tc.namespace
				}
				ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), &user.DefaultInfo{Name: tc.user})
				labels, err := labelsOf(ctx, s, kind.name, path, ns, "root")
				assert.Equal(t, tc.wantReads, c.reads[kind.name])
				if tc.check != nil {
					require.Error(t, err)
					tc.check(t, err)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, map[string]string{"a": "b"}, labels)
			})
		}
	}
}

// store is a cluster of objects by kind and namespace/name; a missing one is not found.
type store struct {
	claims, snapshots map[string]map[string]string
	dataVolumes       map[string]*cdi.DataVolume
	dataSources       map[string]*cdi.DataSource
}

func (s *store) claim(_ context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	labels, ok := s.claims[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(claimsResource.GroupResource(), name)
	}
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}, nil
}

func (s *store) DataVolume(_ context.Context, namespace, name string) (*cdi.DataVolume, error) {
	dv, ok := s.dataVolumes[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(dataVolumesResource.GroupResource(), name)
	}
	return dv, nil
}

func (s *store) DataSource(_ context.Context, namespace, name string) (*cdi.DataSource, error) {
	ds, ok := s.dataSources[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(dataSourcesResource.GroupResource(), name)
	}
	return ds, nil
}

func (s *store) SnapshotLabels(_ context.Context, namespace, name string) (map[string]string, error) {
	labels, ok := s.snapshots[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(snapshotsResource.GroupResource(), name)
	}
	return labels, nil
}

// TestInferMatchersFromDataVolumes: a write through the registry infers from a dataVolume
// volume with the reader the registry makes, as the requesting user: each path of
// pkg/instancetype/infer through the authorizer, and a 403 for each kind the user may not get.
func TestInferMatchersFromDataVolumes(t *testing.T) {
	medium := map[string]string{"instancetype.kubevirt.io/default-instancetype": "u1.medium"}
	small := map[string]string{"instancetype.kubevirt.io/default-instancetype": "u1.small"}
	cluster := &store{
		claims:    map[string]map[string]string{"os-images/fedora-root": small, "ns/root": medium},
		snapshots: map[string]map[string]string{"os-images/fedora-snap": small},
		dataSources: map[string]*cdi.DataSource{
			"os-images/fedora": {ObjectMeta: metav1.ObjectMeta{Labels: medium}},
			"os-images/from-pvc": {Spec: cdi.DataSourceSpec{Source: cdi.DataSourceSource{
				PVC: &cdi.DataVolumeSourcePVC{Namespace: "os-images", Name: "fedora-root"}}}},
			"os-images/from-snapshot": {Spec: cdi.DataSourceSpec{Source: cdi.DataSourceSource{
				Snapshot: &cdi.DataVolumeSourceSnapshot{Namespace: "os-images", Name: "fedora-snap"}}}},
		},
		dataVolumes: map[string]*cdi.DataVolume{
			"ns/labelled": {ObjectMeta: metav1.ObjectMeta{Labels: small}},
			"ns/from-ds": {Spec: cdi.DataVolumeSpec{SourceRef: &cdi.DataVolumeSourceRef{Kind: "DataSource",
				Namespace: ptr.To("os-images"), Name: "fedora"}}},
		},
	}
	dataSource := func(name string) *cdiv1beta1.DataVolumeSpec {
		return &cdiv1beta1.DataVolumeSpec{SourceRef: &cdiv1beta1.DataVolumeSourceRef{Kind: "DataSource", Namespace: ptr.To("os-images"), Name: name}}
	}
	cloning := &cdiv1beta1.DataVolumeSpec{Source: &cdiv1beta1.DataVolumeSource{PVC: &cdiv1beta1.DataVolumeSourcePVC{Namespace: "ns", Name: "root"}}}
	// vm boots from the DataVolume dv, of a template with spec unless nil, and infers its
	// instance type from it under policy.
	vm := func(dv string, spec *cdiv1beta1.DataVolumeSpec, policy *kubevirt.InferFromVolumeFailurePolicy) *kubevirt.VirtualMachine {
		vm := &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1"}}
		vm.Spec.Instancetype = &kubevirt.InstancetypeMatcher{InferFromVolume: "boot", InferFromVolumeFailurePolicy: policy}
		vm.Spec.Template = &kubevirt.VirtualMachineInstanceTemplateSpec{}
		vm.Spec.Template.Spec.Volumes = []kubevirt.Volume{{Name: "boot", VolumeSource: kubevirt.VolumeSource{
			DataVolume: &kubevirt.DataVolumeSource{Name: dv}}}}
		if spec != nil {
			vm.Spec.DataVolumeTemplates = []kubevirt.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: dv}, Spec: *spec}}
		}
		return vm
	}
	// The users: alice may get everything; each of the others everything but one resource.
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() == "get" && a.GetUser().GetName() != "no-"+a.GetResource() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	scheme := runtime.NewScheme()
	kubevirtinstall.Install(scheme)
	r := &REST{authorizer: authz, claims: cluster.claim, volumeSources: cluster, expander: NewStrategy(scheme, nil).expander}

	ignore := ptr.To(kubevirt.IgnoreInferFromVolumeFailure)
	for _, tc := range []struct {
		name        string
		user        string
		vm          *kubevirt.VirtualMachine
		want        string // the instance type's name; "" for none
		wantInvalid string // a 422's message
		wantRefused string // a 403's message
	}{
		{name: "a template from a labelled DataSource", vm: vm("vm1-root", dataSource("fedora"), nil), want: "u1.medium"},
		{name: "a DataSource without labels: its claim's", vm: vm("vm1-root", dataSource("from-pvc"), nil), want: "u1.small"},
		{name: "a DataSource without labels: its VolumeSnapshot's", vm: vm("vm1-root", dataSource("from-snapshot"), nil), want: "u1.small"},
		{name: "a template cloning a claim", vm: vm("vm1-root", cloning, nil), want: "u1.medium"},
		{name: "an existing DataVolume's labels", vm: vm("labelled", nil, nil), want: "u1.small"},
		{name: "a DataVolume without labels: its DataSource's", vm: vm("from-ds", nil, nil), want: "u1.medium"},
		{name: "a missing DataSource, Reject", vm: vm("vm1-root", dataSource("nope"), nil),
			wantInvalid: "the DataSource os-images/nope of the DataVolume template vm1-root of volume boot does not exist"},
		{name: "a missing DataSource, Ignore", vm: vm("vm1-root", dataSource("nope"), ignore)},
		{name: "no DataVolume nor claim, Reject", vm: vm("nope", nil, nil),
			wantInvalid: "neither the DataVolume nope of volume boot nor a claim of its name exists"},
		{name: "no DataVolume nor claim, Ignore", vm: vm("nope", nil, ignore)},
		{name: "a user who may not get the DataVolume", user: "no-datavolumes", vm: vm("labelled", nil, ignore),
			wantRefused: `may not get datavolumes.cdi.kubevirt.io in namespace "ns"`},
		{name: "a user who may not get the DataSource", user: "no-datasources", vm: vm("vm1-root", dataSource("fedora"), ignore),
			wantRefused: `may not get datasources.cdi.kubevirt.io in namespace "os-images"`},
		{name: "a user who may not get the DataSource's claim", user: "no-persistentvolumeclaims", vm: vm("vm1-root", dataSource("from-pvc"), ignore),
			wantRefused: `may not get persistentvolumeclaims in namespace "os-images"`},
		{name: "a user who may not get the DataSource's VolumeSnapshot", user: "no-volumesnapshots", vm: vm("vm1-root", dataSource("from-snapshot"), ignore),
			wantRefused: `may not get volumesnapshots.snapshot.storage.k8s.io in namespace "os-images"`},
		{name: "a user who may not get a missing DataSource learns nothing of it", user: "no-datasources", vm: vm("vm1-root", dataSource("nope"), ignore),
			wantRefused: `may not get datasources.cdi.kubevirt.io in namespace "os-images"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.user
			if name == "" {
				name = "alice"
			}
			ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name})
			err := r.inferMatchers(ctx, tc.vm)
			switch {
			case tc.wantRefused != "":
				require.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
				assert.Contains(t, err.Error(), "spec.instancetype.inferFromVolume")
				assert.Contains(t, err.Error(), `user "`+name+`" `+tc.wantRefused)
			case tc.wantInvalid != "":
				require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
				assert.Contains(t, err.Error(), tc.wantInvalid)
			case tc.want == "":
				require.NoError(t, err)
				assert.Nil(t, tc.vm.Spec.Instancetype, "dropped under Ignore")
			default:
				require.NoError(t, err)
				assert.Equal(t, &kubevirt.InstancetypeMatcher{Name: tc.want, Kind: "virtualmachineclusterinstancetype"}, tc.vm.Spec.Instancetype)
			}
		})
	}
}
