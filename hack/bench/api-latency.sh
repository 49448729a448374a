#!/usr/bin/env bash
# Prints Hangar's API latency at a realistic load against the same schema as a CRD: a fixed
# BENCH_RATE (20) creates/s and twice as many gets/s for BENCH_SECONDS (60), open loop, to
# Hangar's typed clientset through kube-apiserver -> virt-api and to the CRD, BENCH_RUNS (1)
# times each, alternating; p50 and p99 of each, with both etcds syncing to disk. Target:
# Hangar's p99 at most half the CRD's. Needs the Kubernetes binaries (hack/cluster/build.sh).
# A benchmark, not a test: it fails only on errors.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
hack/cluster/build.sh
mkdir -p _output/bench
go build -o _output/bench/virt-api ./cmd/virt-api
HANGAR_VIRT_API="${ROOT}/_output/bench/virt-api" \
  go test -count=1 -v -tags bench -timeout 60m -run 'TestAPILatency' ./test/bench/ 2>&1 |
  grep -v -E '^[IWE][0-9]{4} |^\{"level"'
