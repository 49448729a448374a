#!/usr/bin/env bash
# Prints Hangar's API throughput against the same schema as a CRD in the same kube-apiserver:
# creates/s and list latency for BENCH_VMS (5000) VirtualMachines through kube-apiserver ->
# virt-api (APIService), and through kube-apiserver's CRD handler; then the creates that pay
# for virt-api's launcher pod checks (VMs that run, instances). BENCH_LAUNCHER_POD_CHECKS=off
# runs virt-api without them, for a before/after pair. Needs the Kubernetes binaries
# (hack/cluster/build.sh). A benchmark, not a test: it fails only on errors.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
hack/cluster/build.sh
go test -count=1 -v -tags bench -timeout 60m -run TestAPIThroughput ./test/bench/ 2>&1 |
  grep -v -E '^[IWE][0-9]{4} |^\{"level"'
