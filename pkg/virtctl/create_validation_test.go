package virtctl

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	instancetypeinstall "github.com/hangarvm/hangar/pkg/apis/instancetype/install"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	kubevirtinstall "github.com/hangarvm/hangar/pkg/apis/kubevirt/install"
	"github.com/hangarvm/hangar/pkg/operator/render"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancetype"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinepreference"
)

// virtAPI is what of virt-api a created manifest meets: its decoding (YAML into the versioned
// type, defaulted, converted to the internal one) and its registries' create strategies, with
// the instance types and preferences stored so far for VMs to name.
type virtAPI struct {
	scheme  *runtime.Scheme
	decoder runtime.Decoder
	// stored instance types and preferences, by namespace/name ("/name": cluster-wide).
	instancetypes, preferences stored
	// sources are the cluster's objects VMs infer from.
	sources volumeSources
}

// volumeSources are the labels of claims and DataSources, by namespace/name; an object not there
// does not exist, nor do DataVolumes and VolumeSnapshots.
type volumeSources struct {
	claims, dataSources map[string]map[string]string
}

func (v volumeSources) ClaimLabels(_ context.Context, _ *field.Path, namespace, name string) (map[string]string, error) {
	if labels, ok := v.claims[namespace+"/"+name]; ok {
		return labels, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (v volumeSources) DataSource(_ context.Context, _ *field.Path, namespace, name string) (*cdi.DataSource, error) {
	if labels, ok := v.dataSources[namespace+"/"+name]; ok {
		return &cdi.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "cdi.kubevirt.io", Resource: "datasources"}, name)
}

func (volumeSources) DataVolume(_ context.Context, _ *field.Path, _, name string) (*cdi.DataVolume, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "cdi.kubevirt.io", Resource: "datavolumes"}, name)
}

func (volumeSources) SnapshotLabels(_ context.Context, _ *field.Path, _, name string) (map[string]string, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots"}, name)
}

// stored serves Get as a registry does, in the namespace of the context.
type stored map[string]runtime.Object

func (s stored) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if obj, ok := s[ns+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(instancetype.Resource("stored"), name)
}

// newVirtAPI stores hangar-operator's common instance types and preferences (u1.medium,
// fedora, ...), as a cluster has them.
func newVirtAPI(t *testing.T) *virtAPI {
	scheme := runtime.NewScheme()
	kubevirtinstall.Install(scheme)
	instancetypeinstall.Install(scheme)
	api := &virtAPI{scheme: scheme, decoder: serializer.NewCodecFactory(scheme).UniversalDecoder(),
		instancetypes: stored{}, preferences: stored{}, sources: volumeSources{
			claims: map[string]map[string]string{"default/fedora-root": {
				instancetype.DefaultInstancetypeLabel: "u1.medium", instancetype.DefaultPreferenceLabel: "fedora"}},
			dataSources: map[string]map[string]string{"os-images/fedora": {
				instancetype.DefaultInstancetypeLabel: "u1.medium", instancetype.DefaultPreferenceLabel: "fedora"}, "os-images/plain": {}},
		}}
	for _, o := range render.Catalogue() {
		internal, err := scheme.ConvertToVersion(o.Object, runtime.InternalGroupVersioner)
		require.NoError(t, err)
		api.store(internal)
	}
	return api
}

func (api *virtAPI) store(obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	switch obj.(type) {
	case *instancetype.VirtualMachineInstancetype, *instancetype.VirtualMachineClusterInstancetype:
		api.instancetypes[m.GetNamespace()+"/"+m.GetName()] = obj
	default:
		api.preferences[m.GetNamespace()+"/"+m.GetName()] = obj
	}
}

// create decodes a manifest and validates it as virt-api would create it, in namespace when the
// manifest names none (kubectl's context); an instance type or preference it accepts is stored.
func (api *virtAPI) create(t *testing.T, manifest, namespace string) (field.ErrorList, []string) {
	t.Helper()
	obj, _, err := api.decoder.Decode([]byte(manifest), nil, nil)
	require.NoError(t, err, manifest)
	ctx := context.Background()
	m, err := meta.Accessor(obj)
	require.NoError(t, err)
	if m.GetNamespace() == "" && !isClusterWide(obj) {
		m.SetNamespace(namespace)
	}
	var errs field.ErrorList
	var warnings []string
	switch obj := obj.(type) {
	case *kubevirt.VirtualMachine:
		strategy := virtualmachine.NewStrategy(api.scheme, &virtualmachine.Instancetypes{
			Instancetypes: api.instancetypes, ClusterInstancetypes: api.instancetypes,
			Preferences: api.preferences, ClusterPreferences: api.preferences,
		})
		if err := strategy.InferMatchers(ctx, obj, api.sources); err != nil {
			errs = field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
			break
		}
		strategy.PrepareForCreate(ctx, obj)
		errs = strategy.Validate(ctx, obj)
	case *instancetype.VirtualMachineInstancetype, *instancetype.VirtualMachinePreference:
		if _, ok := obj.(*instancetype.VirtualMachineInstancetype); ok {
			errs, warnings = validateScoped(ctx, virtualmachineinstancetype.NewStrategy(api.scheme, true), obj)
		} else {
			errs, warnings = validateScoped(ctx, virtualmachinepreference.NewStrategy(api.scheme, true), obj)
		}
	case *instancetype.VirtualMachineClusterInstancetype:
		errs, warnings = validateScoped(ctx, virtualmachineinstancetype.NewStrategy(api.scheme, false), obj)
	case *instancetype.VirtualMachineClusterPreference:
		errs, warnings = validateScoped(ctx, virtualmachinepreference.NewStrategy(api.scheme, false), obj)
	default:
		t.Fatalf("unexpected %T", obj)
	}
	if len(errs) == 0 {
		if _, isVM := obj.(*kubevirt.VirtualMachine); !isVM {
			api.store(obj)
		}
	}
	return errs, warnings
}

func isClusterWide(obj runtime.Object) bool {
	switch obj.(type) {
	case *instancetype.VirtualMachineClusterInstancetype, *instancetype.VirtualMachineClusterPreference:
		return true
	}
	return false
}

// createStrategy is what a registry's create strategy does before it stores an object.
type createStrategy interface {
	PrepareForCreate(context.Context, runtime.Object)
	Validate(context.Context, runtime.Object) field.ErrorList
	WarningsOnCreate(context.Context, runtime.Object) []string
}

func validateScoped(ctx context.Context, s createStrategy, obj runtime.Object) (field.ErrorList, []string) {
	s.PrepareForCreate(ctx, obj)
	return s.Validate(ctx, obj), s.WarningsOnCreate(ctx, obj)
}

// TestCreatedManifestsPassValidation: virt-api accepts what `virtctl create` prints, a VM with
// the instance type and preference it names expanded (the common ones hangar-operator
// installs, or ones created before it); and refuses what it should, so the check is real.
func TestCreatedManifestsPassValidation(t *testing.T) {
	tests := []struct {
		name     string
		commands [][]string // run in order; the errors are the last one's
		wantErr  string     // empty: accepted
		warning  string
	}{
		{name: "the instance types guide's VM, of the common u1.medium and fedora",
			commands: [][]string{{"vm", "--name", "my-vm", "--instancetype", "u1.medium", "--preference", "fedora",
				"--volume-containerdisk=src:quay.io/containerdisks/fedora:latest"}}},
		{name: "the defaults alone", commands: [][]string{{"vm"}}},
		{name: "DataVolumes: a DataSource, a clone, a blank disk and imports",
			commands: [][]string{{"vm", "--name=my-vm", "--instancetype", "u1.medium", "--preference", "fedora",
				"--volume-datasource=src:os-images/fedora,size:30Gi,bootorder:1", "--volume-clone-pvc=src:team-a/base,storageclass:local",
				"--volume-blank=size:1Gi", "--volume-import=type:http,url:https://example.org/disk.img,size:2Gi,name:web",
				"--volume-import=type:registry,url:docker://quay.io/containerdisks/fedora:41,size:10Gi",
				"--volume-import=type:ds,src:fedora", "--volume-import=type:snapshot,src:team-a/snap"}}},
		{name: "memory, volumes with boot orders, a generated cloud-config",
			commands: [][]string{{"vm", "--name=my-vm", "--memory=1Gi", "--run-strategy=manual", "--termination-grace-period=0",
				"--volume-containerdisk=src:my.registry/my-image:my-tag", "--volume-containerdisk=src:registry:5000/tools:v1,name:tools,bootorder:2",
				"--volume-pvc=src:my-pvc,bootorder:1", "--user=cloud-user", "--ssh-key=ssh-ed25519 AAAA me@host", "--ga-manage-ssh"}}},
		{name: "cloud-init user and network data",
			commands: [][]string{{"-n", "team-a", "vm", "--cloud-init-user-data=" + b64("#cloud-config\nuser: me"),
				"--cloud-init-network-data=" + b64("version: 2")}}},
		{name: "an instance type and a preference created before, cluster-wide",
			commands: [][]string{
				{"instancetype", "--name=small", "--cpu=2", "--memory=1Gi"},
				{"preference", "--name=cores", "--cpu-topology=cores", "--machine-type=q35", "--volume-storage-class=local-path"},
				{"vm", "--name=my-vm", "--instancetype=small", "--preference=virtualmachineclusterpreference/cores", "--volume-pvc=src:root,bootorder:1"},
			}},
		{name: "namespaced ones, with -n",
			commands: [][]string{
				{"-n", "team-a", "instancetype", "--name=small", "--cpu=2", "--memory=512Mi"}, // spread: sockets of 2 cores
				{"-n", "team-a", "preference", "--name=spread", "--cpu-topology=spread"},
				{"-n", "team-a", "vm", "--instancetype=virtualmachineinstancetype/small", "--preference=virtualmachinepreference/spread",
					"--volume-containerdisk=src:img"},
			}},
		{name: "namespaced ones, with --namespaced and kubectl's namespace",
			commands: [][]string{
				{"instancetype", "--namespaced", "--name=small", "--cpu=1", "--memory=512Mi"},
				{"vm", "--instancetype=VirtualMachineInstancetype/small"},
			}},
		{name: "a GPU: the instance type is stored, with a warning",
			commands: [][]string{{"instancetype", "--name=gpu", "--cpu=1", "--memory=1Gi", "--gpu=name:g,devicename:nvidia.com/GA102"}},
			warning:  "spec.gpus is not supported by Hangar"},
		{name: "a GPU: a VM naming it is refused",
			commands: [][]string{
				{"instancetype", "--name=gpu", "--cpu=1", "--memory=1Gi", "--gpu=name:g,devicename:nvidia.com/GA102"},
				{"vm", "--instancetype=gpu"},
			},
			wantErr: "spec.gpus"},
		{name: "an instance type the cluster lacks", commands: [][]string{{"vm", "--instancetype=u1.huge"}},
			wantErr: `spec.instancetype.name: Not found: "u1.huge"`},
		{name: "a namespaced instance type of another namespace",
			commands: [][]string{
				{"-n", "team-a", "instancetype", "--name=small", "--cpu=1", "--memory=512Mi"},
				{"-n", "team-b", "vm", "--instancetype=virtualmachineinstancetype/small"},
			},
			wantErr: `spec.instancetype.name: Not found: "small"`},
		{name: "fedora's 2Gi against the default 512Mi", commands: [][]string{{"vm", "--preference=fedora"}},
			wantErr: "2Gi"},
		{name: "inferred from a labelled claim, asked for",
			commands: [][]string{{"vm", "--volume-pvc=src:fedora-root", "--infer-instancetype", "--infer-preference"}}},
		{name: "inferred from a labelled claim by default: the instance type's memory replaces the default",
			commands: [][]string{{"vm", "--volume-containerdisk=src:img", "--volume-pvc=src:fedora-root,bootorder:1"}}},
		{name: "a claim that names nothing, by default: the VM goes on with its memory",
			commands: [][]string{{"vm", "--volume-pvc=src:plain"}}},
		{name: "a claim that names nothing, asked for", commands: [][]string{{"vm", "--volume-pvc=src:plain", "--infer-instancetype-from=plain"}},
			wantErr: "the claim plain of volume plain does not exist"},
		{name: "inferred from a labelled DataSource by default",
			commands: [][]string{{"vm", "--volume-datasource=src:os-images/fedora"}}},
		{name: "a DataSource that names nothing, by default: the VM goes on with its memory",
			commands: [][]string{{"vm", "--volume-datasource=src:os-images/plain"}}},
		{name: "a DataSource that names nothing, asked for",
			commands: [][]string{{"vm", "--name=my-vm", "--volume-datasource=src:os-images/plain", "--infer-instancetype"}},
			wantErr:  "the DataSource os-images/plain of the DataVolume template my-vm-ds-plain of volume my-vm-ds-plain has no label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newVirtAPI(t)
			var errs field.ErrorList
			var warnings []string
			for _, args := range tt.commands {
				out, stderr, err := runCreate(t, args...)
				require.NoError(t, err, stderr)
				errs, warnings = api.create(t, out, "default")
				if tt.wantErr == "" {
					require.Empty(t, errs, "%s\n%s", strings.Join(args, " "), out)
				}
			}
			if tt.wantErr != "" {
				require.NotEmpty(t, errs)
				assert.Contains(t, errs.ToAggregate().Error(), tt.wantErr)
			}
			if tt.warning != "" {
				assert.Contains(t, strings.Join(warnings, "\n"), tt.warning)
			}
		})
	}
}
