#!/usr/bin/env bash
# The installer's figures (docs/performance.md): the time from `kubectl apply` of a release to
# Available on two nodes (manifest and Helm chart), the time of a whole upgrade from the
# previous release with guests running, each guest's longest pause in it (from the guests' own
# clocks, which stop while a VM is paused), and the API errors a client reading and writing VMs
# saw meanwhile (target: none that failed every retry). They come from the installer tests
# (test/e2e/install_test.go), which print them as FIGURE lines.
#
# Needs the local cluster, two nodes, without Hangar:
#   hack/cluster/down.sh && hack/cluster/up.sh --nodes 2 && hack/bench/install.sh
# Leaves the cluster without Hangar.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
[[ $(id -u) == 0 ]] || { echo "hack/bench/install.sh: needs root (the local cluster)" >&2; exit 1; }

hack/test-install.sh releases >/dev/null
for test in TestInstallerUpgrade TestInstallerRemoval TestInstallerHelm; do
	hack/test-install.sh "${test}" | grep -E 'FIGURE|^--- ' | sed -E 's/^.*FIGURE /  /'
done
