#!/usr/bin/env bash
# hack/bench/migration.sh: live migration figures on this host (root; libvirtd and QEMU under TCG,
# the node-test harness): migration time and the gap in a guest's 20 ms console counter, for a
# 128 MiB and a 1 GiB guest, Hangar's launcher-to-launcher migration against
# `virsh migrate --live --p2p` between two libvirtds of the same kind, in one run.
# Usage: hack/bench/migration.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
[[ $(id -u) == 0 ]] || { echo "bench/migration.sh: needs root (libvirtd, namespaces)" >&2; exit 1; }
hack/install-node-deps.sh >/dev/null
hack/guest/build-kernelboot.sh >/dev/null
export HANGAR_NODE_TEST_RUN=bm$$
go test -tags libvirt,bench -count=1 -timeout 30m -run TestBenchLiveMigration -v ./test/node/ 2>&1 | grep '^bench-migration:\|^--- \|FAIL\|^ok'
