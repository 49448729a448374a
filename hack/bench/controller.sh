#!/usr/bin/env bash
# Measures virt-controller: the time to take N VMs (runStrategy Always) to N instances and N
# launcher pods, and the controller's heap per instance. virt-api runs in-process on an
# embedded etcd; pods go to a fake clientset (objects only, no kubelet).
#   hack/bench/controller.sh          # N=1000
#   HANGAR_BENCH_VMS=200 hack/bench/controller.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export HANGAR_BENCH_VMS="${HANGAR_BENCH_VMS:-1000}"
exec go test ./test/controller/ -run '^$' -bench '^BenchmarkVMStartup$' -benchtime 1x -timeout 30m
