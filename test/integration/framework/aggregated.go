package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// Cluster is kube-apiserver with virt-api registered behind it through APIServices, as in a
// real cluster: clients talk to kube-apiserver only, with kube's authentication and RBAC.
type Cluster struct {
	*KubeAPIServer
	// VirtAPI is the aggregated server, running in-process with delegated authn/authz.
	VirtAPI *VirtAPI
	// Hangar is a kubevirt.io clientset for the admin, through kube-apiserver.
	Hangar versioned.Interface
	// AdminKubeconfig is a kubeconfig file for the admin.
	AdminKubeconfig string
}

// virtAPIService is the Service the APIServices point at; the serving cert carries its name.
const (
	virtAPINamespace = "hangar"
	virtAPIService   = "virt-api"
)

// StartAggregated starts kube-apiserver and virt-api, applies Hangar's RBAC manifests from
// artifacts/, registers the APIServices and waits until they are Available. Everything stops
// when the test ends.
func StartAggregated(t testing.TB) *Cluster {
	t.Helper()
	return StartAggregatedWith(t, nil)
}

// StartAggregatedWith is StartAggregated with virt-api's options adjusted by customize.
func StartAggregatedWith(t testing.TB, customize func(o *virtapi.Options)) *Cluster {
	t.Helper()
	return startAggregated(t, "", customize)
}

// StartAggregatedProcess is StartAggregatedWith with virt-api running as a process of binary
// (a build of cmd/virt-api), for benchmarks that measure it apart from the test.
func StartAggregatedProcess(t testing.TB, binary string, customize func(o *virtapi.Options)) *Cluster {
	t.Helper()
	return startAggregated(t, binary, customize)
}

func startAggregated(t testing.TB, binary string, customize func(o *virtapi.Options)) *Cluster {
	t.Helper()
	dir := t.TempDir()
	// virt-api's port is chosen first: kube-apiserver's webhook credentials name it.
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := StartKubeAPIServer(dir, port)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{KubeAPIServer: kube, AdminKubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		VirtAPI: &VirtAPI{Dir: filepath.Join(dir, "virt-api"), Binary: binary, customize: customize, port: port}}
	// kube-apiserver goes first: its proxied watches would hold virt-api's shutdown open.
	t.Cleanup(func() {
		kube.Stop()
		c.VirtAPI.Stop()
	})
	if err := WriteKubeconfig(kube.Admin, c.AdminKubeconfig); err != nil {
		t.Fatal(err)
	}
	root := RepoRoot()
	if out, err := c.Kubectl("apply", "-f", filepath.Join(root, "artifacts/install/namespace.yaml"),
		"-f", filepath.Join(root, "artifacts/install/rbac/virt-api.yaml"),
		"-f", filepath.Join(root, "artifacts/install/rbac/aggregated-roles.yaml")); err != nil {
		t.Fatalf("apply RBAC: %v\n%s", err, out)
	}

	c.VirtAPI.configure = c.delegatedVirtAPI
	if err := c.VirtAPI.start(); err != nil {
		t.Fatal(err)
	}

	if err := c.registerAPIServices(); err != nil {
		t.Fatal(err)
	}
	if err := kube.StartControllerManager(); err != nil {
		t.Fatal(err)
	}
	if err := c.waitForRoleAggregation(); err != nil {
		t.Fatal(err)
	}
	if c.Hangar, err = versioned.NewForConfig(kube.Admin); err != nil {
		t.Fatal(err)
	}
	return c
}

// delegatedVirtAPI configures virt-api as in a cluster: its service account's token, a
// serving certificate for its Service name, delegated authentication and authorization.
func (c *Cluster) delegatedVirtAPI(o *virtapi.Options) error {
	ctx := context.Background()
	if err := os.MkdirAll(c.VirtAPI.Dir, 0o700); err != nil {
		return err
	}
	token, err := c.Kube.CoreV1().ServiceAccounts(virtAPINamespace).CreateToken(ctx, "virt-api",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for virt-api: %w", err)
	}
	kubeconfig := filepath.Join(c.VirtAPI.Dir, "virt-api.kubeconfig")
	if err := WriteKubeconfig(&rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.PEM},
		BearerToken: token.Status.Token}, kubeconfig); err != nil {
		return err
	}
	serving, err := c.CA.ServingCert("virt-api",
		[]string{virtAPIService + "." + virtAPINamespace + ".svc", "localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return err
	}
	o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile = serving.CertFile
	o.RecommendedOptions.SecureServing.ServerCert.CertKey.KeyFile = serving.KeyFile
	o.RecommendedOptions.Authentication.RemoteKubeConfigFile = kubeconfig
	o.RecommendedOptions.Authorization.RemoteKubeConfigFile = kubeconfig
	o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath = kubeconfig
	// kube-apiserver calls webhooks as WebhookClientUser (writeAdmissionConfig).
	o.AuthorizeWebhookCallers = true

	// The framework's readiness probe talks to virt-api directly, anonymously: /readyz is
	// always allowed.
	c.VirtAPI.Kubeconfig = filepath.Join(c.VirtAPI.Dir, "direct.kubeconfig")
	return WriteKubeconfig(&rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", c.VirtAPI.port),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.PEM}}, c.VirtAPI.Kubeconfig)
}

// registerAPIServices applies the APIServices of artifacts/ and points them at virt-api, a
// host process reached through an ExternalName Service, then waits until all are Available.
func (c *Cluster) registerAPIServices() error {
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Services(virtAPINamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: virtAPIService},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if out, err := c.Kubectl("apply", "-f", filepath.Join(RepoRoot(), "artifacts/components/apiservices.yaml")); err != nil {
		return fmt.Errorf("apply APIServices: %v\n%s", err, out)
	}
	aggregator, err := aggregatorclient.NewForConfig(c.Admin)
	if err != nil {
		return err
	}
	list, err := aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var names []string
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Spec.Service == nil || svc.Spec.Service.Name != virtAPIService {
			continue
		}
		svc.Spec.Service.Port = ptr.To(int32(c.VirtAPI.port))
		svc.Spec.CABundle = c.CA.PEM
		if _, err := aggregator.ApiregistrationV1().APIServices().Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		names = append(names, svc.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("artifacts/components/apiservices.yaml has no APIService for %s", virtAPIService)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			svc, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			available := false
			for _, cond := range svc.Status.Conditions {
				available = available || (cond.Type == apiregistrationv1.Available && cond.Status == apiregistrationv1.ConditionTrue)
			}
			if !available {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("APIServices not Available: %w", err)
	}
	// kube-apiserver fetches aggregated OpenAPI documents a moment after the APIService turns
	// Available; kubectl explain and apply need them.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		body, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		return err == nil && strings.Contains(string(body), `"apis/kubevirt.io/v1"`), nil
	})
}

// waitForRoleAggregation waits until the built-in edit role carries Hangar's rights.
func (c *Cluster) waitForRoleAggregation() error {
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"view", "edit", "admin"} {
			role, err := c.Kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			aggregated := false
			for _, rule := range role.Rules {
				for _, group := range rule.APIGroups {
					aggregated = aggregated || group == "kubevirt.io"
				}
			}
			if !aggregated {
				return false, nil
			}
		}
		return true, nil
	})
}

// RegisterEvictionWebhook applies the ValidatingWebhookConfiguration of artifacts/ (virt-api's
// eviction webhook), pointed at the in-process virt-api as the APIServices are.
func (c *Cluster) RegisterEvictionWebhook() error {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "artifacts/components/webhooks.yaml"))
	if err != nil {
		return err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return err
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.Service.Port = ptr.To(int32(c.VirtAPI.port))
		cfg.Webhooks[i].ClientConfig.CABundle = c.CA.PEM
	}
	_, err = c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
	return err
}

// Kubectl runs kubectl as the admin.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return c.KubectlAs(c.AdminKubeconfig, args...)
}

// KubectlAs runs kubectl with the given kubeconfig and a private discovery cache.
func (c *Cluster) KubectlAs(kubeconfig string, args ...string) (string, error) {
	cacheDir, err := os.MkdirTemp(c.Dir, "kubectl-cache-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(cacheDir)
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig, "--cache-dir", cacheDir}, args...)...).CombinedOutput()
	return string(out), err
}
