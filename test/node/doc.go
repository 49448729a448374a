// Package node holds the node side's tests that need root, libvirtd, QEMU and network
// namespaces. They carry the build tag libvirt, so `go test ./...` on a bare machine skips
// them; hack/test-node.sh installs what they need and runs them.
package node
