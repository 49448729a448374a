#!/usr/bin/env bash
# Builds a single-layer image locally and imports it into the containerd of every node of the
# local cluster (namespace k8s.io, where the kubelets look); pods then use imagePullPolicy:
# Never or IfNotPresent. hack/cluster/push.sh puts an image into the cluster's registry
# instead, from which the nodes pull it as from any registry.
#
# Usage: hack/cluster/image.sh IMAGE IMAGEBUILD-FLAGS...
#   hack/cluster/image.sh hangar.local/virt-api:dev \
#       -file _output/bin/virt-api:/usr/bin/virt-api -entrypoint /usr/bin/virt-api
#   hack/cluster/image.sh hangar.local/tool:dev -dir path/to/rootfs -cmd '["/tool","-v"]'
# Flags are imagebuild's (-dir, -file, -tar, -entrypoint, -cmd, -env, -workdir, -user); run
# _output/bin/imagebuild -h for details. imagebuild is deterministic: an unchanged input gives
# an identical tarball, which is not imported again.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 2)) || die "usage: $(basename "$0") IMAGE IMAGEBUILD-FLAGS... (see the header of this script)"
require_root
ref="$1"
shift
tarball="${CLUSTER_DIR}/images/$(tr '/:' '__' <<<"${ref}").tar"
mkdir -p "${CLUSTER_DIR}/images"
run_step image "build ${ref}" "${BIN_DIR}/imagebuild" -image "${ref}" -out "${tarball}" "$@" >/dev/null
"${CLUSTER_TOOL}" import "${ref}" "${tarball}"
