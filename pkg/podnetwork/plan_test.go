package podnetwork

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func testVMI(mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: "uid-1"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	v1.DefaultVirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

func TestPlans(t *testing.T) {
	podNet := func(cidr string) []v1.Network {
		return []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{VMNetworkCIDR: cidr}}}}
	}
	bridge := v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}
	tests := []struct {
		name string
		vmi  *v1.VirtualMachineInstance
		want Plan
		err  string
	}{
		{
			name: "default: masquerade on 10.0.2.0/24",
			vmi:  testVMI(),
			want: Plan{Interface: "default", Binding: BindingMasquerade, Bridge: "hangar-br0", Tap: "hangar-tap0",
				MAC: "52:54:00:", Gateway: netip.MustParsePrefix("10.0.2.1/24"), Guest: netip.MustParsePrefix("10.0.2.2/24"), Hostname: "guest"},
		},
		{
			name: "masquerade with a network, ports and a hostname",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Hostname = "host"
				v.Spec.Networks = podNet("192.168.7.0/29")
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", Ports: []v1.Port{{Port: 22}, {Port: 53, Protocol: "UDP"}}}}
			}),
			want: Plan{Interface: "net", Binding: BindingMasquerade, Bridge: "hangar-br0", Tap: "hangar-tap0",
				MAC: "52:54:00:", Gateway: netip.MustParsePrefix("192.168.7.1/29"), Guest: netip.MustParsePrefix("192.168.7.2/29"),
				Ports: []v1.Port{{Port: 22, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}, Hostname: "host"},
		},
		{
			name: "bridge: the MAC is the pod interface's, found in the pod; ports only inform",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = podNet("")
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", InterfaceBindingMethod: bridge, Ports: []v1.Port{{Port: 80}}}}
			}),
			want: Plan{Interface: "net", Binding: BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
				Gateway: netip.MustParsePrefix("169.254.75.10/32"), Hostname: "guest"},
		},
		{
			name: "bridge with the spec's MAC",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = podNet("")
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", InterfaceBindingMethod: bridge, MacAddress: "DE:AD:00:00:BE:EF"}}
			}),
			want: Plan{Interface: "net", Binding: BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
				MAC: "de:ad:00:00:be:ef", Gateway: netip.MustParsePrefix("169.254.75.10/32"), Hostname: "guest"},
		},
		{
			name: "too small a VM network",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = podNet("10.0.0.0/31")
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net"}}
			}),
			err: "at least 4 addresses",
		},
		{
			name: "interface without network",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = podNet("")
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "other", InterfaceBindingMethod: bridge}}
			}),
			err: "no network of that name",
		},
		{
			name: "two pod interfaces",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Networks = append(podNet(""), v1.Network{Name: "second", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}})
				v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", InterfaceBindingMethod: bridge}, {Name: "second", InterfaceBindingMethod: bridge}}
			}),
			err: "only one interface",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plans, err := Plans(tt.vmi)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, plans, 1)
			got := plans[0]
			// A derived MAC depends on the UID: only its prefix is fixed.
			if strings.HasSuffix(tt.want.MAC, ":") {
				assert.True(t, strings.HasPrefix(got.MAC, tt.want.MAC), got.MAC)
				got.MAC = tt.want.MAC
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
