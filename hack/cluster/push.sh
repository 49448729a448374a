#!/usr/bin/env bash
# Builds a single-layer image (or takes a whole one with -from) and pushes it to the local
# cluster's registry on the host (hack/cluster/up.sh starts it), whose certificate the cluster
# CA signed. Prints the image pinned by digest, REGISTRY/NAME@sha256:..., for manifests to use
# with any imagePullPolicy: every node pulls it from the registry.
#
# Usage: hack/cluster/push.sh NAME:TAG IMAGEBUILD-FLAGS...
#   image=$(hack/cluster/push.sh hangar/virt-api:v0.1.0 \
#       -file _output/bin/virt-api:/usr/bin/virt-api -entrypoint /usr/bin/virt-api)
#   image=$(hack/cluster/push.sh other/tool:v1 -from tool.tar)  # docker-archive or OCI layout
# Flags are imagebuild's (-dir, -file, -tar, -entrypoint, -cmd, -env, -workdir, -user, -from,
# -out); run _output/bin/imagebuild -h for details. The registry and its CA are those
# `hangar-cluster registry` prints.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 2)) || die "usage: $(basename "$0") NAME:TAG IMAGEBUILD-FLAGS... (see the header of this script)"
name="$1"
shift
[[ ${name##*/} == *:* ]] || die "${name}: name a tag (NAME:TAG)"
eval "$("${CLUSTER_TOOL}" registry)"
ref="${HANGAR_REGISTRY}/${name}"
start=${SECONDS}
out="$("${BIN_DIR}/imagebuild" -image "${ref}" -push -ca "${HANGAR_REGISTRY_CA}" "$@")"
digest="${out##* }"
[[ ${digest} == sha256:* ]] || die "imagebuild printed no digest for ${ref}"
log "[push] ${ref} ${digest} ($((SECONDS - start))s)"
echo "${ref%:*}@${digest}"
