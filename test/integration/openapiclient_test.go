package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// kubevirtSwaggerEnv names a copy of KubeVirt's api/openapi-spec/swagger.json, which Hangar
// does not ship. When set, TestGeneratedClients also builds the v2 program against the client
// generated from it (the program is written against that client) and runs it against virt-api,
// and checks that every method of that client for an operation virt-api serves has the same
// signature in the client generated from virt-api's /openapi/v2.
const kubevirtSwaggerEnv = "HANGAR_KUBEVIRT_SWAGGER"

// TestGeneratedClients generates Go clients with oapi-codegen (test/openapiclient, a module of
// its own) from virt-api's /openapi/v2 and /openapi/v3/apis/kubevirt.io/v1, as they are, builds
// the programs of test/openapiclient/program against them and runs them against virt-api: each
// creates a VM, starts it paused with StartOptions, unpauses it, migrates it with
// MigrateOptions and stops it with a grace period, through generated methods only, and checks
// the answers (202s, their bodies, 404, 409 and 422); the v2 program, written against the
// client generated from KubeVirt's swagger.json, also patches and deletes the VM. The test plays
// the controller and the node, and logs how long generating, building and running take
// (hack/test.sh runs it as a stage of its own).
func TestGeneratedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and builds clients: up to a few minutes with cold caches")
	}
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	module, err := filepath.Abs(filepath.Join("..", "openapiclient"))
	require.NoError(t, err)
	ctx := context.Background()

	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, server.Client)
	dir := t.TempDir()
	save := func(name, path string) string {
		raw, err := server.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		require.NoError(t, err, path)
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, raw, 0o600))
		return file
	}
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, server.Config.CAData, 0o600))

	type variant struct {
		name, doc, pkg, program string
		// kubevirt: the document is KubeVirt's swagger.json, which gen must repair.
		kubevirt bool
	}
	variants := []variant{
		{name: "v2", doc: save("v2.json", "/openapi/v2"), pkg: "swagger", program: "./program/swagger"},
		{name: "v3", doc: save("v3.json", "/openapi/v3/apis/kubevirt.io/v1"), pkg: "openapiv3", program: "./program/openapiv3"},
	}
	if swagger := os.Getenv(kubevirtSwaggerEnv); swagger != "" {
		variants = append(variants, variant{name: "kubevirt-swagger", doc: swagger, pkg: "swagger", program: "./program/swagger", kubevirt: true})
	} else {
		t.Logf("%s is not set: the v2 program is not built against KubeVirt's own client", kubevirtSwaggerEnv)
	}
	goCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = module
		// The module's go.sum must be complete: nothing is added to it.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v:\n%s", args, out)
	}
	started := time.Now()
	gen := filepath.Join(dir, "gen")
	goCmd("build", "-o", gen, "./gen")
	t.Logf("oapi-codegen built in %s", time.Since(started).Round(time.Millisecond))

	generated := map[string]string{}
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			started := time.Now()
			generated[v.name] = filepath.Join(dir, v.name+".go")
			args := []string{"-in", v.doc, "-out", generated[v.name], "-package", v.pkg}
			if v.kubevirt {
				args = append(args, "-repair")
			}
			out, err := exec.Command(gen, args...).CombinedOutput()
			require.NoError(t, err, "gen %v:\n%s", args, out)
			// The client lands in the program's import path without touching the tree.
			overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
				filepath.Join(module, v.pkg, "zz_generated.client.go"): generated[v.name]}})
			require.NoError(t, err)
			overlayFile := filepath.Join(dir, v.name+"-overlay.json")
			require.NoError(t, os.WriteFile(overlayFile, overlay, 0o600))
			bin := filepath.Join(dir, v.name)
			goCmd("build", "-overlay", overlayFile, "-o", bin, v.program)
			built := time.Now()

			ns, name := fmt.Sprintf("openapi-client-%d", i), "demo"
			playController(t, server.Client, agent, ns, name)
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "HANGAR_URL="+server.Config.Host, "HANGAR_CA="+ca,
				"HANGAR_SERVER_NAME="+server.Config.TLSClientConfig.ServerName, "HANGAR_TOKEN="+server.Config.BearerToken,
				"HANGAR_NAMESPACE="+ns, "HANGAR_VM="+name)
			out, err = cmd.CombinedOutput()
			t.Logf("%s", out)
			require.NoError(t, err)
			t.Logf("generated and built in %s, ran in %s", built.Sub(started).Round(time.Millisecond), time.Since(built).Round(time.Millisecond))
		})
	}
	if generated["kubevirt-swagger"] != "" && generated["v2"] != "" {
		t.Run("same signatures", func(t *testing.T) {
			sameClientSignatures(t, generated["kubevirt-swagger"], generated["v2"])
		})
	}
	t.Logf("generated clients: %s in all", time.Since(started).Round(time.Millisecond))
}

// unimplementedQuery are the operations of KubeVirt's client whose methods take query
// parameters virt-api does not implement, so its document does not list them and the
// methods take no params argument: v1VNC's preserveSession, v1VNCScreenshot's moveCursor.
var unimplementedQuery = map[string]bool{"V1VNC": true, "V1VNCScreenshot": true}

// withBody is the suffix of the method variants of one operation that take a body.
var withBody = regexp.MustCompile(`With[A-Za-z0-9]*Body$`)

// sameClientSignatures checks that every method of the client generated from KubeVirt's
// swagger.json (kubevirtFile) for an operation the client generated from virt-api's
// (hangarFile) has is there too with the same signature: a program calling it compiles
// against either.
func sameClientSignatures(t *testing.T, kubevirtFile, hangarFile string) {
	kubevirt, hangar := clientMethods(t, kubevirtFile), clientMethods(t, hangarFile)
	operation := func(method string) string {
		return withBody.ReplaceAllString(strings.TrimSuffix(method, "WithResponse"), "")
	}
	served := map[string]bool{}
	for method := range hangar {
		served[operation(method)] = true
	}
	same, operations := 0, map[string]bool{}
	for method, signature := range kubevirt {
		op := operation(method)
		if !served[op] || unimplementedQuery[op] {
			continue
		}
		operations[op] = true
		if assert.Contains(t, hangar, method, "virt-api's client lacks a method of an operation it serves") &&
			assert.Equal(t, signature, hangar[method], method) {
			same++
		}
	}
	require.NotZero(t, same)
	t.Logf("%d methods of KubeVirt's client, for %d operations virt-api serves, have the same signature in virt-api's", same, len(operations))
}

// clientMethods are the methods of a generated client's ClientWithResponses and their
// signatures, with type aliases (the generator's names for shared parameters, as
// NamespaceNfszEHZ0 = string) replaced by what they stand for.
func clientMethods(t *testing.T, file string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	aliases := map[string]ast.Expr{}
	for _, decl := range f.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok {
			for _, s := range gen.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Assign.IsValid() {
					aliases[ts.Name.Name] = ts.Type
				}
			}
		}
	}
	methods := map[string]string{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
			continue
		}
		if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); !ok || fmt.Sprint(star.X) != "ClientWithResponses" {
			continue
		}
		for _, field := range fn.Type.Params.List {
			if id, ok := field.Type.(*ast.Ident); ok && aliases[id.Name] != nil {
				field.Type = aliases[id.Name]
			}
		}
		methods[fn.Name.Name] = types.ExprString(fn.Type)
	}
	return methods
}

// playController does, until the test ends, what virt-controller and the node would for the
// VM name: a start request becomes a Running instance on node-a (paused if asked), whose fake
// launcher pauses and unpauses it.
func playController(t *testing.T, client versioned.Interface, agent *nodeAgent, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			vm, err := client.KubevirtV1().VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(vm.Status.StateChangeRequests) == 0 || vm.Status.StateChangeRequests[0].Action != v1.StartRequest {
				continue
			}
			paused := vm.Status.StateChangeRequests[0].Data[v1.StartRequestDataPausedKey] == v1.StartRequestDataPausedTrue
			if err := startInstance(ctx, t, client, agent, vm, paused); err != nil {
				t.Errorf("start the instance of %s/%s: %v", ns, name, err)
				return
			}
		}
	}()
}

// startInstance makes vm's instance and marks the request done, as virt-controller would.
func startInstance(ctx context.Context, t *testing.T, client versioned.Interface, agent *nodeAgent, vm *v1.VirtualMachine, paused bool) error {
	vmis := client.KubevirtV1().VirtualMachineInstances(vm.Namespace)
	vmi, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: vm.Name},
		Spec: vm.Spec.Template.Spec}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	agent.fakePausingLauncher(t, client, vmi)
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	if paused {
		vmi.Status.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}, metav1.Now())
	}
	if _, err := vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm, err := client.KubevirtV1().VirtualMachines(vm.Namespace).Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		if vm, err = client.KubevirtV1().VirtualMachines(vm.Namespace).Update(ctx, vm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		vm.Status.StateChangeRequests = nil
		_, err = client.KubevirtV1().VirtualMachines(vm.Namespace).UpdateStatus(ctx, vm, metav1.UpdateOptions{})
		return err
	})
}

// fakePausingLauncher serves pause and unpause for vmi's launcher, setting the instance's
// Paused condition as virt-handler would.
func (a *nodeAgent) fakePausingLauncher(t *testing.T, client versioned.Interface, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	setPaused := func(ctx context.Context, paused bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Get(ctx, vmi.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current.Status.RemoveCondition(v1.VirtualMachineInstancePaused)
			if paused {
				current.Status.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}, metav1.Now())
			}
			_, err = client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
			return err
		})
	}
	mux := http.NewServeMux()
	for path, paused := range map[string]bool{launcherapi.PathPause: true, launcherapi.PathUnpause: false} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			if err := setPaused(r.Context(), paused); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			_ = json.NewEncoder(w).Encode(launcherapi.State{UID: string(vmi.UID), Phase: launcherapi.PhaseRunning})
		})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l := listenUnix(t, filepath.Join(a.launcherPod(t, vmi), launcherapi.SocketName))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}
