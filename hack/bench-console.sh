#!/usr/bin/env bash
# Prints the console keystroke round trip through client -> kube-apiserver -> virt-api ->
# virt-handler -> console socket against the socket read directly (p50, p99, ratio), and the
# chain's throughput for a burst of output. Needs the Kubernetes binaries (hack/cluster/build.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
hack/cluster/build.sh
go test -count=1 -v -tags bench -timeout 20m -run TestConsoleLatencyAndThroughput ./test/integration/ 2>&1 |
  grep -v -E '^[IWE][0-9]{4} |^\{"level"'
