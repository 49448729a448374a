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

# Protobuf for Hangar's copy of CDI's DataVolume spec (which kubevirt.io/v1 embeds), kubevirt.io/v1, instancetype.kubevirt.io/v1beta1, snapshot.kubevirt.io/v1beta1
# (whose types embed v1's, so they come after it), clone.kubevirt.io/v1beta1 and export.kubevirt.io/v1beta1, first: go-to-protobuf records each field's number in the Go
# struct's protobuf tag, and later runs keep the numbers it finds there (a new field gets the
# next free one), so the wire format stays stable as the types grow. It writes
# generated.proto and runs protoc with the gogo plugin into generated.pb.go. Both expect a
# GOPATH-style tree of the packages and the .proto files they import: one is made of links
# into the module cache (and this checkout) under a scratch directory.
hack/install-codegen-deps.sh
protobuf_tree=$(mktemp -d)
trap 'rm -rf "${protobuf_tree}"' EXIT
link_module() { # link_module IMPORT_PATH MODULE_DIR
  mkdir -p "${protobuf_tree}/src/$(dirname "$1")"
  ln -s "$2" "${protobuf_tree}/src/$1"
}
go mod download k8s.io/api k8s.io/apimachinery github.com/gogo/protobuf
link_module "${MODULE}" "${ROOT}"
for m in k8s.io/api k8s.io/apimachinery github.com/gogo/protobuf; do
  link_module "${m}" "$(go list -m -f '{{.Dir}}' "${m}")"
done
GOBIN="${protobuf_tree}/bin" go install golang.org/x/tools/cmd/goimports \
  k8s.io/code-generator/cmd/go-to-protobuf k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
# The packages whose types ours embed are read, not generated ("-"); the rest of
# apimachinery's defaults is not needed.
PATH="${protobuf_tree}/bin:${PATH}" go-to-protobuf \
  --go-header-file "${ROOT}/hack/boilerplate.go.txt" \
  --packages "${MODULE}/pkg/apis/cdi/v1beta1,${MODULE}/pkg/apis/kubevirt/v1,${MODULE}/pkg/apis/instancetype/v1beta1,${MODULE}/pkg/apis/snapshot/v1beta1,${MODULE}/pkg/apis/clone/v1beta1,${MODULE}/pkg/apis/export/v1beta1" \
  --apimachinery-packages "-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1,-k8s.io/api/core/v1,-k8s.io/api/autoscaling/v1" \
  --proto-import "${protobuf_tree}/src" \
  --proto-import "${protobuf_tree}/src/github.com/gogo/protobuf/protobuf" \
  --output-dir "${protobuf_tree}/src"

# instancetype.kubevirt.io's types embed kubevirt.io's (CPU features, firmware, clock, ...):
# their conversions are kubevirt.io/v1's. (A snapshot's content keeps a VirtualMachine, whose
# conversion snapshot/v1beta1/conversion.go hands to kubevirt.io/v1's.)
kube::codegen::gen_helpers \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  --extra-peer-dir "${MODULE}/pkg/apis/kubevirt" \
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

# The clientset asks for protobuf (and accepts JSON), as client-go's does for kube's types.
kube::codegen::gen_client \
  --one-input-api kubevirt \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-externals "${core_externals}" \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# instancetype.kubevirt.io has a clientset of its own (kube_codegen generates one API per
# clientset besides all of pkg/apis, which holds hangarvm.io's too), in protobuf as well. The
# kubevirt.io/v1 types it embeds use kubevirt.io's apply configurations.
instancetype_externals=""
for t in CPUFeature FeatureState FeatureAPIC FeatureHyperv FeatureKVM EFI ClockOffset Timer TPMDevice; do
  instancetype_externals+="${instancetype_externals:+,}${MODULE}/pkg/apis/kubevirt/v1.${t}:${MODULE}/pkg/generated/applyconfiguration/kubevirt/v1"
done
kube::codegen::gen_client \
  --one-input-api instancetype \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-externals "${instancetype_externals}" \
  --output-dir "${ROOT}/pkg/generated/instancetype" \
  --output-pkg "${MODULE}/pkg/generated/instancetype" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# snapshot.kubevirt.io has a clientset of its own too, in protobuf; the VirtualMachine a
# snapshot's content keeps uses kubevirt.io's apply configurations, the claims client-go's.
snapshot_externals=""
for t in VirtualMachineSpec VirtualMachineStatus; do
  snapshot_externals+="${snapshot_externals:+,}${MODULE}/pkg/apis/kubevirt/v1.${t}:${MODULE}/pkg/generated/applyconfiguration/kubevirt/v1"
done
for t in TypedLocalObjectReference PersistentVolumeClaimSpec; do
  snapshot_externals+=",k8s.io/api/core/v1.${t}:k8s.io/client-go/applyconfigurations/core/v1"
done
kube::codegen::gen_client \
  --one-input-api snapshot \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-externals "${snapshot_externals}" \
  --output-dir "${ROOT}/pkg/generated/snapshot" \
  --output-pkg "${MODULE}/pkg/generated/snapshot" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# clone.kubevirt.io has a clientset of its own too, in protobuf; its references are client-go's
# apply configurations, its conditions (the snapshot group's type) snapshot.kubevirt.io's.
clone_externals="k8s.io/api/core/v1.TypedLocalObjectReference:k8s.io/client-go/applyconfigurations/core/v1"
clone_externals+=",${MODULE}/pkg/apis/snapshot/v1beta1.Condition:${MODULE}/pkg/generated/snapshot/applyconfiguration/snapshot/v1beta1"
kube::codegen::gen_client \
  --one-input-api clone \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-externals "${clone_externals}" \
  --output-dir "${ROOT}/pkg/generated/clone" \
  --output-pkg "${MODULE}/pkg/generated/clone" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# export.kubevirt.io has a clientset of its own too, in protobuf; its source reference is
# client-go's apply configuration, its conditions (the snapshot group's type) snapshot.kubevirt.io's.
kube::codegen::gen_client \
  --one-input-api export \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-externals "${clone_externals}" \
  --output-dir "${ROOT}/pkg/generated/export" \
  --output-pkg "${MODULE}/pkg/generated/export" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# hangarvm.io is a CustomResourceDefinition of kube-apiserver, which serves custom resources in
# JSON only: a clientset of its own, without protobuf.
kube::codegen::gen_client \
  --one-input-api operator \
  --with-watch \
  --output-dir "${ROOT}/pkg/generated/operator" \
  --output-pkg "${MODULE}/pkg/generated/operator" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

# The CustomResourceDefinition of hangarvm.io, from the Go types and their markers
# (validation, defaults, printer columns), with controller-tools' controller-gen.
go tool controller-gen crd paths=./pkg/apis/operator/... output:crd:dir="${ROOT}/artifacts/install/crd"
