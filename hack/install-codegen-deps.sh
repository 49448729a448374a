#!/usr/bin/env bash
# install-codegen-deps.sh: the Debian package code generation needs beyond Go:
#   - protobuf-compiler (protoc): k8s.io/code-generator's go-to-protobuf writes a .proto IDL
#     of the kubevirt.io types and runs protoc with its gogo plugin on it.
# The Go tools (go-to-protobuf, protoc-gen-gogo, goimports) come from go.mod's tool
# directives; the .proto files protoc imports come from the Go module cache.
# Installs only what is missing; apt-get update runs only then.
set -euo pipefail

if command -v protoc >/dev/null; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-codegen-deps: protoc is missing; install Debian's protobuf-compiler (as root: hack/install-codegen-deps.sh)" >&2
  exit 1
fi
echo "install-codegen-deps: installing protobuf-compiler" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null
