#!/usr/bin/env bash
# Prints the bytes/s one connection carries through virtctl port-forward to a guest, beside
# kubectl port-forward to a pod on the same node (test/e2e/portforward_bench_test.go). Needs the
# cluster and Hangar deployed (hack/local-up.sh). A benchmark, not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig}
go test -count=1 -v -tags e2e,bench -timeout 20m -run '^TestPortForwardFigures$' ./test/e2e/ 2>&1 |
  grep -E '^(port-forward|--- FAIL|FAIL|ok)|Error|port [0-9]+:' || true
