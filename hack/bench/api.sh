#!/usr/bin/env bash
# Prints Hangar's API throughput against the same schema as a CRD in the same kube-apiserver:
# creates/s and list latency for BENCH_VMS (5000) VirtualMachines through kube-apiserver ->
# virt-api (APIService) with Hangar's typed clientset (protobuf) and with client-go's dynamic
# client (JSON), and through kube-apiserver's CRD handler (JSON); then the creates that pay for
# virt-api's launcher pod checks (VMs that run, instances). BENCH_RUNS (1) repeats it on a
# fresh cluster each time and prints medians and ranges. Each row also prints the CPU time per
# create of kube-apiserver, virt-api and the test process (clients and both etcds): on a
# saturated machine creates/s is the inverse of their sum. Then virt-api's memory per stored VM
# at BENCH_MEMORY_VMS (10000) VMs.
#
# virt-api runs as a process of its own (built here), kube-apiserver too; each has an etcd
# in the test process, both without fsync. BENCH_LAUNCHER_POD_CHECKS=off runs virt-api
# without its launcher pod checks; BENCH_PROFILE_DIR=DIR saves CPU profiles of virt-api
# and kube-apiserver during each row's creates. Needs the Kubernetes binaries
# (hack/cluster/build.sh). A benchmark, not a test: it fails only on errors.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
hack/cluster/build.sh
mkdir -p _output/bench
go build -o _output/bench/virt-api ./cmd/virt-api
HANGAR_VIRT_API="${ROOT}/_output/bench/virt-api" \
  go test -count=1 -v -tags bench -timeout 120m -run 'TestAPIThroughput|TestAPIMemory' ./test/bench/ 2>&1 |
  grep -v -E '^[IWE][0-9]{4} |^\{"level"'
