#!/usr/bin/env bash
# The snapshot figures (docs/performance.md): the time to snapshot a running VM with a 1 GiB
# disk (create → readyToUse), how long its guest stays frozen (as the instance's
# fsFreezeStatus shows it), and the time to restore into a new VM and into the stopped VM
# (create → complete). They come from the end-to-end test TestSnapshotAndRestore, which prints
# them as FIGURE lines; the disk is a Block claim of the snapshot add-on's hangar-local-csi.
#
# Needs the local cluster with the snapshot add-on and Hangar installed:
#   HANGAR_CLUSTER_SNAPSHOTS=1 hack/cluster/up.sh && hack/install-local.sh && hack/bench/snapshot.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
runs=${1:-1}
for ((i = 1; i <= runs; i++)); do
	KUBECONFIG="${ROOT}/_cluster/kubeconfig" go test -count=1 -tags e2e -run '^TestSnapshotAndRestore$' -v ./test/e2e/ |
		grep -E 'FIGURE|^--- ' | sed -E 's/^.*FIGURE /  /'
done
