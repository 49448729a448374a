package spoof

import "fmt"

// GuestNet is what the attempts need to know of the guest's network.
type GuestNet struct {
	// Gateway is the guest's default route.
	Gateway string
	// ARPSender is an address on the guest's link it does not have, claimed in ARP to
	// ARPTarget, a neighbour (the guest's gateway inside the pod, for masquerade, learns the
	// sender of a request to it).
	ARPSender, ARPTarget string
	// Target is where the IP attempts send to.
	Target string
}

// Attempt is one way of sending as someone else, typed into the guest's shell.
type Attempt struct {
	Name, Command string
}

// Attempts are what a tenant types into the test guest (busybox) to send with a source not
// its own: IPv4 from an address of the pod network, ARP claiming an address, IPv6 from a
// global address, and frames with another MAC. Each restores what it changed, so the guest's
// own traffic flows afterwards.
func Attempts(g GuestNet) []Attempt {
	setMAC := func(mac string) string {
		// A live change where the NIC allows it (virtio-net does), else down and up, which
		// takes the default route with it.
		return fmt.Sprintf("{ ip link set eth0 address %[1]s 2>/dev/null || { ip link set eth0 down; ip link set eth0 address %[1]s; ip link set eth0 up; }; }; "+
			"ip route replace default via %[2]s", mac, g.Gateway)
	}
	return []Attempt{
		{"IPv4 from another address", fmt.Sprintf("ip addr add 10.99.0.77/32 dev eth0; ping -c 3 -W 1 -I 10.99.0.77 %[1]s; "+
			"ip addr del 10.99.0.77/32 dev eth0", g.Target)},
		{"ARP from another address", fmt.Sprintf("ip addr add %[1]s/32 dev eth0; arping -c 3 -w 3 -I eth0 -s %[1]s %[2]s; "+
			"arping -U -c 2 -w 2 -I eth0 -s %[1]s %[1]s; ip addr del %[1]s/32 dev eth0", g.ARPSender, g.ARPTarget)},
		{"IPv6 from a global address", "ip -6 addr add fd00:99::77/64 dev eth0; sleep 2; ping6 -c 3 -W 1 fd00:99::3; " +
			"ip -6 addr del fd00:99::77/64 dev eth0"},
		{"frames with another MAC", "mac=$(cat /sys/class/net/eth0/address); " + setMAC(ForeignMAC) +
			fmt.Sprintf("; ping -c 3 -W 1 %[1]s; arping -c 2 -w 2 -I eth0 %[1]s; ", g.Target) + setMAC("$mac")},
	}
}

// ForeignMAC is the MAC the attempts put on the guest's NIC.
const ForeignMAC = "02:00:00:00:00:77"
