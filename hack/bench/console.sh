#!/usr/bin/env bash
# Prints console figures in two parts:
#  1. the chain's own cost: keystroke round trip through client -> kube-apiserver -> virt-api ->
#     virt-handler -> console socket against the socket read directly (p50, p99, ratio), with a
#     socket echo standing in for the guest, and the chain's throughput for a burst of output;
#     needs the Kubernetes binaries (hack/cluster/build.sh);
#  2. the same against a real guest on the local cluster: keystroke round trip to the guest's
#     shell echo through the chain against the launcher's console socket on the node, and the
#     guest's output throughput; needs the cluster with Hangar deployed (hack/local-up.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
filter() { grep -v -E '^[IWE][0-9]{4} |^\{"level"|^=== RUN|^--- PASS|^PASS|^ok '; }

hack/cluster/build.sh
echo "== chain with a socket echo for the guest"
go test -count=1 -v -tags bench -timeout 20m -run TestConsoleLatencyAndThroughput ./test/integration/ 2>&1 | filter

echo "== a real guest on the local cluster"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig} PATH=${ROOT}/_output/bin:${PATH}
if ! kubectl get apiservice v1.kubevirt.io >/dev/null 2>&1; then
  echo "no cluster with Hangar deployed: run hack/local-up.sh first" >&2
  exit 1
fi
go test -count=1 -v -tags e2e,bench -timeout 30m -run TestConsoleFigures ./test/e2e/ 2>&1 | filter
