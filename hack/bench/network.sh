#!/usr/bin/env bash
# Prints what virt-handler spends per instance setting up the pod side of its network
# (pkg/podnetwork/setup, called from outside the pod's namespace), for the masquerade and the
# bridge binding: BENCH_RUNS setups each (default 20), each in a fresh pod stand-in (two network
# namespaces and a veth, as in test/node). Needs root; run it under the host lock as the
# node tests are. A benchmark, not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
[[ $(id -u) == 0 ]] || { echo "bench/network.sh: needs root (network namespaces)" >&2; exit 1; }
hack/install-node-deps.sh
HANGAR_BENCH_RUNS=${BENCH_RUNS:-20} go test -v -tags libvirt -count=1 -run '^TestNetworkSetupFigures$' ./test/node/ |
  grep '^network setup'
