#!/usr/bin/env bash
# Runs Hangar's tests: build, vet, generated-code drift, unit and integration tests (a real
# virt-api on a real embedded etcd, driven by the generated clientset and kubectl, and behind
# a real kube-apiserver through APIServices). Prints each stage's duration.
#
# The Kubernetes binaries come from hack/cluster/build.sh: ~15-20 min cold, seconds warm.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

stage() {
  local name=$1
  shift
  local start=${SECONDS}
  echo "=== [stage] ${name}"
  "$@"
  echo "=== [stage] ${name} done ($((SECONDS - start))s)"
}

stage "go build" go build ./...
stage "go vet" go vet ./...
stage "verify codegen" hack/verify-codegen.sh
stage "kubernetes binaries" hack/cluster/build.sh
stage "go test" go test -count=1 -tags kube ./...
