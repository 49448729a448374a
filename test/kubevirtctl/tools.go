//go:build tools

// Package kubevirtctl pins KubeVirt's own virtctl, v1.6.0, built from the Go module proxy:
//
//	go build -C test/kubevirtctl -o virtctl kubevirt.io/kubevirt/cmd/virtctl
//
// test/e2e runs it against Hangar (TestKubeVirtVirtctl). The replaces are those of KubeVirt's
// own go.mod, which a dependent module must repeat (Go applies only the main module's); its
// staging modules kubevirt.io/api and kubevirt.io/client-go are their v1.6.0 releases.
package kubevirtctl

import _ "kubevirt.io/kubevirt/pkg/virtctl"
