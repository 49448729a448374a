#!/usr/bin/env bash
# Prints Hangar's control plane at scale: kube-apiserver, kube-scheduler, virt-api and
# virt-controller real, BENCH_SCALE_NODES (100) nodes and their launcher pods simulated by KWOK
# (sigs.k8s.io/kwok, built here from the Go module proxy), virt-handler's status write played
# by a stand-in; BENCH_SCALE_VMIS (8000) instances created in steps (1000, then the rest):
# the time to all Running, virt-api's and virt-controller's heap per instance (targets: <= 20 KB
# in virt-controller, growth <= 1.2x from 1,000 to 8,000), and the API's latency under a fixed
# load of BENCH_RATE (5) VM creates/s meanwhile (Kubernetes' SLO: mutating p99 <= 1 s).
# Needs the Kubernetes binaries (hack/cluster/build.sh). A benchmark: it fails only on errors.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
KWOK_VERSION=v0.8.0
hack/cluster/build.sh
mkdir -p _output/bench
go build -o _output/bench/virt-api ./cmd/virt-api
go build -o _output/bench/virt-controller ./cmd/virt-controller
if [[ ! -x _output/bench/kwok-${KWOK_VERSION} ]]; then
	# Outside Hangar's module: KWOK's dependency graph stays out of ours.
	GOBIN="${ROOT}/_output/bench/kwok-build" go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
	mv _output/bench/kwok-build/kwok "_output/bench/kwok-${KWOK_VERSION}"
fi
# KWOK does nothing without stages: its own (in its module's source) for nodes that turn Ready
# and keep a lease, and pods that run, complete and go.
KWOK_DIR=$(cd /tmp && go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
STAGES="${KWOK_DIR}/kustomize/stage"
HANGAR_KWOK_STAGES="${STAGES}/node/fast/node-initialize.yaml,${STAGES}/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"
HANGAR_KWOK_STAGES+=",${STAGES}/pod/fast/pod-ready.yaml,${STAGES}/pod/fast/pod-complete.yaml,${STAGES}/pod/fast/pod-delete.yaml"
export HANGAR_KWOK_STAGES
HANGAR_VIRT_API="${ROOT}/_output/bench/virt-api" HANGAR_VIRT_CONTROLLER="${ROOT}/_output/bench/virt-controller" \
HANGAR_KWOK="${ROOT}/_output/bench/kwok-${KWOK_VERSION}" \
  go test -count=1 -v -tags bench -timeout 120m -run 'TestControlPlaneScale' ./test/bench/ 2>&1 |
  grep -v -E '^[IWE][0-9]{4} |^\{"level"'
