package virtctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
)

// testKubeconfig writes a kubeconfig of one cluster whose current context uses namespace ns.
func testKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
- name: other
  cluster: {server: "https://127.0.0.2:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: `+ns+`}
- name: other
  context: {cluster: other, user: u, namespace: elsewhere}
current-context: ctx
`), 0o600))
	return path
}

// runWithFakes runs virtctl's command line on fake clientsets and returns its output and error.
func runWithFakes(t *testing.T, kv *fake.Clientset, kube *kubefake.Clientset, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	c := &cliContext{flags: genericclioptions.NewConfigFlags(true), streams: Streams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out},
		kubevirt: kv, kubernetes: kube}
	cmd := newCommand(c)
	cmd.SetArgs(append([]string{"--kubeconfig", testKubeconfig(t, "default")}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func exposable() []runtime.Object {
	labels := map[string]string{"app": "web"}
	spec := v1.VirtualMachineInstanceSpec{
		Networks: []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}},
		Domain: v1.DomainSpec{Devices: v1.Devices{Interfaces: []v1.Interface{{Name: "default",
			Ports: []v1.Port{{Port: 80}, {Port: 53, Protocol: "udp"}}}}}},
	}
	return []runtime.Object{
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "myvm", Namespace: "default",
			Labels: map[string]string{"app": "web", nodeNameLabel: "node-a", v1.OutdatedLauncherImageLabel: ""}}, Spec: spec},
		&v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "myvm", Namespace: "default"}, Spec: v1.VirtualMachineSpec{
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}},
		&v1.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "myrs", Namespace: "default"},
			Spec: v1.VirtualMachineInstanceReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}},
	}
}

// TestExposeKubeVirtFlags runs KubeVirt's documented and tested `virtctl expose` command lines
// against fake clientsets and checks the Service they create.
func TestExposeKubeVirtFlags(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name    string
		args    []string
		want    corev1.ServiceSpec
		wantErr string
	}{
		{name: "KubeVirt's example: SSH on a node port",
			args: []string{"expose", "vmi", "myvm", "--port=5555", "--node-port=30001", "--target-port=22", "--name=myvm-ssh", "--type=NodePort"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: web, Ports: []corev1.ServicePort{
				{Protocol: corev1.ProtocolTCP, Port: 5555, NodePort: 30001, TargetPort: intstr.FromInt32(22)}}}},
		{name: "a VM, space-separated flags, a named target port",
			args: []string{"expose", "vm", "myvm", "--name", "web", "--port", "80", "--target-port", "http", "--port-name", "http"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: web, Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}}}},
		{name: "long kind names, any case; UDP",
			args: []string{"expose", "VirtualMachineInstance", "myvm", "--name=dns", "--port=53", "--protocol=UDP"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: web, Ports: []corev1.ServicePort{
				{Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)}}}},
		{name: "headless, with an external IP",
			args: []string{"expose", "vmis", "myvm", "--name=h", "--port=80", "--cluster-ip=None", "--external-ip=192.0.2.10"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: web, ClusterIP: "None", ExternalIPs: []string{"192.0.2.10"},
				Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80)}}}},
		{name: "a load balancer with its IP, dual stack",
			args: []string{"expose", "vmirs", "myrs", "--name=lb", "--port=443", "--type=LoadBalancer", "--load-balancer-ip=192.0.2.20",
				"--ip-family=IPv4,IPv6", "--ip-family-policy=PreferDualStack"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: web, LoadBalancerIP: "192.0.2.20",
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack),
				Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(443)}}}},
		{name: "no --port: the interface's declared ports",
			args: []string{"expose", "vmirs", "myrs", "--name=all"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: web, Ports: []corev1.ServicePort{
				{Name: "port-1", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80)},
				{Name: "port-2", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)}}}},
		{name: "a node port on a ClusterIP Service", args: []string{"expose", "vm", "myvm", "--name=x", "--port=1", "--node-port=30001"},
			wantErr: "--node-port needs --type NodePort or LoadBalancer"},
		{name: "ExternalName", args: []string{"expose", "vm", "myvm", "--name=x", "--port=1", "--type=ExternalName"},
			wantErr: `unknown service type "ExternalName"`},
		{name: "an unknown protocol", args: []string{"expose", "vm", "myvm", "--name=x", "--port=1", "--protocol=ICMP"},
			wantErr: `unknown protocol "ICMP"`},
		{name: "a bad external IP", args: []string{"expose", "vm", "myvm", "--name=x", "--port=1", "--external-ip=nope"},
			wantErr: `--external-ip "nope" is not an IP address`},
		{name: "an unknown kind", args: []string{"expose", "pod", "myvm", "--name=x", "--port=1"},
			wantErr: `unsupported resource type "pod"`},
		{name: "no name", args: []string{"expose", "vm", "myvm", "--port=1"}, wantErr: `required flag(s) "name" not set`},
		{name: "a missing VM", args: []string{"expose", "vm", "nope", "--name=x", "--port=1"},
			wantErr: `virtualmachines.kubevirt.io "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewSimpleClientset()
			out, err := runWithFakes(t, fake.NewSimpleClientset(exposable()...), kube, tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err, out)
			svcs, err := kube.CoreV1().Services("default").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, svcs.Items, 1)
			assert.Equal(t, tt.want, svcs.Items[0].Spec)
			assert.Contains(t, out, "Service "+svcs.Items[0].Name+" successfully exposed for")
		})
	}
}
