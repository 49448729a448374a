#!/usr/bin/env bash
# Regenerates deepcopy, defaulting, conversion, OpenAPI and the clientset (with informers,
# listers and apply configurations) with k8s.io/code-generator's kube_codegen.sh, at the
# version go.mod pins.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=github.com/hangarvm/hangar

# `go list -m -f '{{.Dir}}'` prints nothing for a module that is not in the module cache yet (a
# fresh machine: `go build ./...` never needs code-generator's sources), so download it first.
if ! go mod download k8s.io/code-generator; then
  echo "update-codegen: cannot download k8s.io/code-generator (the version go.mod pins) from the module proxy" >&2
  exit 1
fi
CODEGEN_DIR=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
if [[ -z ${CODEGEN_DIR} || ! -f ${CODEGEN_DIR}/kube_codegen.sh ]]; then
  echo "update-codegen: k8s.io/code-generator has no kube_codegen.sh in the module cache (dir: '${CODEGEN_DIR}')" >&2
  exit 1
fi
# shellcheck source=/dev/null
source "${CODEGEN_DIR}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# The schemas of the core types the API embeds (affinity, tolerations, quantities) and of the
# autoscaling/v1 Scale subresource must be in the same document. API rule violations are
# recorded, not hidden: the list must only shrink.
kube::codegen::gen_openapi \
  --extra-pkgs k8s.io/api/core/v1 \
  --extra-pkgs k8s.io/api/autoscaling/v1 \
  --extra-pkgs k8s.io/apimachinery/pkg/api/resource \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --report-filename "${ROOT}/hack/api-rules-violations.list" \
  --update-report \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# Core types the API embeds use client-go's own apply configurations.
core_externals=""
for t in Affinity Toleration LocalObjectReference PersistentVolumeClaimVolumeSource; do
  core_externals+="${core_externals:+,}k8s.io/api/core/v1.${t}:k8s.io/client-go/applyconfigurations/core/v1"
done

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --applyconfig-externals "${core_externals}" \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"
