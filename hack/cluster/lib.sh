# shellcheck shell=bash disable=SC2034 # settings are used by the scripts that source this
# Shared settings and helpers for hack/cluster/*.sh and the scripts that use the local
# cluster. Sourced, never executed. The cluster's own settings (nodes, addresses, ports)
# are hangar-cluster's: see hack/cluster/README.md.

CLUSTER_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd "${CLUSTER_SCRIPTS_DIR}/../.." && pwd -P)"
TOOLS_DIR="${REPO_ROOT}/hack/tools"

# Canonical paths: they are compared with /proc/<pid>/exe and mount points.
BIN_DIR="$(realpath -m "${HANGAR_BIN_DIR:-${REPO_ROOT}/_output/bin}")"
CLUSTER_DIR="$(realpath -m "${HANGAR_CLUSTER_DIR:-${REPO_ROOT}/_cluster}")"

KUBE_VERSION="v1.34.4"
ADMIN_KUBECONFIG="${CLUSTER_DIR}/kubeconfig"
# hangar-cluster (hack/tools/cmd/cluster) runs the cluster; these scripts build and call it.
CLUSTER_TOOL="${BIN_DIR}/hangar-cluster"

kubectl_admin() {
	"${BIN_DIR}/kubectl" --kubeconfig "${ADMIN_KUBECONFIG}" "$@"
}

log() {
	printf '%s\n' "$*" >&2
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# run_step PREFIX NAME COMMAND... prints "[PREFIX] NAME ... (Ns)" with the
# elapsed seconds once COMMAND is done. COMMAND runs in plain context, not
# under "||", so that set -e still stops it at its first failing command; the
# EXIT trap then reports the step that failed.
CURRENT_STEP=""
run_step() {
	local prefix="$1" name="$2"
	shift 2
	local start=${SECONDS}
	CURRENT_STEP="[${prefix}] ${name}"
	printf '%s ...' "${CURRENT_STEP}" >&2
	"$@"
	printf ' (%ds)\n' "$((SECONDS - start))" >&2
	CURRENT_STEP=""
}

report_failed_step() {
	local rc=$?
	if ((rc != 0)) && [[ -n ${CURRENT_STEP} ]]; then
		printf '\n%s FAILED (exit %d)\n' "${CURRENT_STEP}" "${rc}" >&2
	fi
}
trap report_failed_step EXIT

# lock_cluster_dir serialises up.sh and down.sh on one cluster directory.
# The lock lives on fd 9 until the script exits.
lock_cluster_dir() {
	exec 9>"${CLUSTER_DIR}/.lock"
	flock -n 9 || die "another up.sh or down.sh is working on ${CLUSTER_DIR}"
}

require_root() {
	[[ ${EUID} -eq 0 ]] || die "$(basename "$0") must run as root (it manages containerd, iptables and mounts)"
}

# wait_until TIMEOUT_SECONDS DESCRIPTION COMMAND... polls COMMAND every 0.2 s.
wait_until() {
	local timeout="$1" what="$2"
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log ""
			log "timed out after ${timeout}s waiting for ${what}"
			return 1
		fi
		sleep 0.2
	done
}
