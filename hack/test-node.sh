#!/usr/bin/env bash
# test-node.sh: the node side's tests that need root, libvirtd, QEMU and network
# namespaces (build tag `libvirt`, in test/node), after the unit tests of the node packages.
#   1. installs the Debian packages (hack/install-node-deps.sh) and Debian's Chromium for the
#      browser VNC test (hack/install-browser.sh; a missing browser fails it here);
#   2. builds the kernelBoot, containerDisk and UEFI test guests (hack/guest; cached);
#   3. go test ./pkg/launcher/... ./pkg/podnetwork/... ./pkg/handler/... (no libvirtd needed);
#   4. go test -tags libvirt ./test/node/...: a private libvirtd per virt-launcher (its
#      state, QEMU's capability cache included, under _output/node-test/libvirt), the guest
#      under TCG, network namespaces named hangar-test-*; all of them are stopped and
#      deleted when each test ends.
#   5. with CLUSTER=1, also the launcher pod on the local cluster (build tags libvirt,cluster):
#      builds the launcher image (hack/build-node-images.sh) and needs hack/cluster/up.sh.
# Measured figures are appended to _output/node-test/figures.txt.
# Usage: hack/test-node.sh [go test flags...], e.g. hack/test-node.sh -run TestLauncher -v
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
[[ $(id -u) == 0 ]] || { echo "test-node: needs root (libvirtd, namespaces)" >&2; exit 1; }

# ip netns makes /run/netns for the tests' namespaces and bind-mounts it onto itself; a run
# that found none there unmounts and removes it again once it is empty, as it found the host.
remove_netns_dir() {
  [[ -d /run/netns && -z "$(ls -A /run/netns)" ]] || return 0
  while mountpoint -q /run/netns; do umount /run/netns || return 0; done
  rmdir /run/netns || true
}
[[ -e /run/netns ]] || trap remove_netns_dir EXIT

hack/install-node-deps.sh
hack/install-browser.sh
export HANGAR_REQUIRE_BROWSER=1
hack/guest/build-kernelboot.sh >/dev/null
hack/guest/build-containerdisk.sh >/dev/null
hack/guest/build-uefi.sh >/dev/null
go test ./pkg/launcher/... ./pkg/podnetwork/... ./pkg/handler/...
# Names what this run leaves on the host (see runID in test/node), so the check below is
# not fooled by another run on the same machine.
export HANGAR_NODE_TEST_RUN=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
go test -tags libvirt -count=1 -timeout 20m "$@" ./test/node/...
if [[ "${CLUSTER:-0}" == 1 ]]; then
  hack/build-node-images.sh
  KUBECONFIG=${KUBECONFIG:-$ROOT/_cluster/kubeconfig} \
    go test -tags libvirt,cluster -count=1 -timeout 10m -run TestLauncherPodOnLocalCluster "$@" ./test/node/...
fi

# Nothing of this run may survive: no launcher, libvirtd or QEMU (all of them run below the
# node's directory, /tmp/hn<run>), no test namespaces.
leftover=$(pgrep -af "/hn$HANGAR_NODE_TEST_RUN/" || true)
netns=$(ip netns list | grep -- "^hangar-test-[a-z]*-$HANGAR_NODE_TEST_RUN-" || true)
if [[ -n "$leftover$netns" ]]; then
  echo "test-node: left behind:" >&2
  echo "$leftover$netns" >&2
  exit 1
fi
