#!/usr/bin/env bash
# cluster-down: stops exactly what hack/cluster/up.sh started and undoes its changes to the
# host (hangar-cluster down): every node's pods, daemons, namespaces and cgroups, the bridge,
# loop devices of the cluster's volumes, kernel-wide sysctls (restored to the values recorded
# at the first up) and host paths that did not exist before. On a stopped cluster it changes
# nothing. The data (PKI, etcd, images, containerd content) stays in _cluster/ so the next up
# is fast; --purge deletes it too.
#
# Usage: hack/cluster/down.sh [--purge]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
if [[ ! -x ${CLUSTER_TOOL} ]]; then
	[[ -d ${CLUSTER_DIR} ]] || { log "[down] nothing to do: no cluster directory"; exit 0; }
	"${CLUSTER_SCRIPTS_DIR}/build.sh"
fi
exec "${CLUSTER_TOOL}" down "$@"
