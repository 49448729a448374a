#!/usr/bin/env bash
# Prints KubeVirt's density figures on the local cluster (test/e2e/density_bench_test.go):
# BENCH_DENSITY (100) VMIs created 100 ms apart beside as many plain pods at the same pace,
# creation -> Running P50/P95 (-> banner too with BENCH_DENSITY_BANNERS, for KVM hosts),
# deletion -> gone, and the writes to virtualmachineinstances per launcher pod against
# KubeVirt's thresholds. The issue's cluster
# has three nodes: hack/cluster/up.sh --nodes 3, then hack/install-local.sh. A benchmark: it
# fails only on errors.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig}
go test -count=1 -v -tags e2e,bench -timeout 60m -run '^TestDensityFigures$' ./test/e2e/ 2>&1 |
  grep -E '^(density|--- FAIL|FAIL|ok)|Error|Test:' || true
