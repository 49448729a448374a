#!/usr/bin/env bash
# Prints what a scrape of virt-handler's /metrics costs with 1, 10 and BENCH_METRICS_VMS (30)
# guests on its node: the scrape's wall time and the handler's CPU per scrape, virt-handler's memory
# per instance, and each guest's pod's host memory beside its QEMU
# (test/e2e/metrics_bench_test.go). Needs the cluster and Hangar deployed (hack/local-up.sh).
# A benchmark, not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig}
go test -count=1 -v -tags e2e,bench -timeout 40m -run '^TestMetricsFigures$' ./test/e2e/ 2>&1 |
  grep -E '^([0-9]+ VMIs on the node|virt-handler resident|--- FAIL|FAIL|ok)|Error' || true
