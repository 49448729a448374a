# shellcheck shell=bash disable=SC2034 # settings are used by the scripts that source this
# Shared settings and helpers for hack/cluster/*.sh. Sourced, never executed.
#
# Every setting can be overridden from the environment. Ports are deliberately
# uncommon: other programs on a shared machine may hold 2379, 6443 or 10250.

CLUSTER_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd "${CLUSTER_SCRIPTS_DIR}/../.." && pwd -P)"
TOOLS_DIR="${REPO_ROOT}/hack/tools"

# Canonical paths: they are compared with /proc/<pid>/exe and mount points.
BIN_DIR="$(realpath -m "${HANGAR_BIN_DIR:-${REPO_ROOT}/_output/bin}")"
CLUSTER_DIR="$(realpath -m "${HANGAR_CLUSTER_DIR:-${REPO_ROOT}/_cluster}")"

KUBE_VERSION="v1.34.4"
NODE_NAME="${HANGAR_NODE_NAME:-hangar-node}"

# The node's only address is the gateway of its own CNI bridge: the cluster
# never listens on, nor routes to, any other interface of the host.
BRIDGE="${HANGAR_BRIDGE:-hangar0}"
POD_CIDR="${HANGAR_POD_CIDR:-10.217.0.0/24}"
NODE_IP="${HANGAR_NODE_IP:-10.217.0.1}"
SERVICE_CIDR="${HANGAR_SERVICE_CIDR:-10.218.0.0/24}"
KUBERNETES_SERVICE_IP="${HANGAR_KUBERNETES_SERVICE_IP:-10.218.0.1}"

ETCD_PORT="${HANGAR_ETCD_PORT:-23790}"
ETCD_PEER_PORT="${HANGAR_ETCD_PEER_PORT:-23800}"
APISERVER_PORT="${HANGAR_APISERVER_PORT:-16443}"
CONTROLLER_MANAGER_PORT="${HANGAR_CONTROLLER_MANAGER_PORT:-20257}"
SCHEDULER_PORT="${HANGAR_SCHEDULER_PORT:-20259}"
KUBELET_PORT="${HANGAR_KUBELET_PORT:-20250}"
KUBELET_HEALTHZ_PORT="${HANGAR_KUBELET_HEALTHZ_PORT:-20248}"
PROXY_HEALTHZ_PORT="${HANGAR_PROXY_HEALTHZ_PORT:-20256}"
PROXY_METRICS_PORT="${HANGAR_PROXY_METRICS_PORT:-20249}"

# Images built locally; the cluster cannot pull.
PAUSE_IMAGE="${HANGAR_PAUSE_IMAGE:-hangar.local/pause:v1}"
BUSYBOX_IMAGE="${HANGAR_BUSYBOX_IMAGE:-hangar.local/busybox:v1}"

# Layout of the cluster directory.
PKI_DIR="${CLUSTER_DIR}/pki"
CONFIG_DIR="${CLUSTER_DIR}/config"
LOG_DIR="${CLUSTER_DIR}/logs"
PID_DIR="${CLUSTER_DIR}/run"
HOST_STATE_DIR="${CLUSTER_DIR}/host"
IMAGE_DIR="${CLUSTER_DIR}/images"
ETCD_DATA_DIR="${CLUSTER_DIR}/etcd"
CONTAINERD_DIR="${CLUSTER_DIR}/containerd"
CONTAINERD_SOCKET="${CONTAINERD_DIR}/containerd.sock"
KUBELET_ROOT="${CLUSTER_DIR}/kubelet"
CNI_CONF_DIR="${CLUSTER_DIR}/cni/net.d"
CNI_IPAM_DIR="${CLUSTER_DIR}/cni/ipam"
POD_LOG_DIR="${CLUSTER_DIR}/pod-logs"
ADMIN_KUBECONFIG="${CLUSTER_DIR}/kubeconfig"

CNI_BIN_DIR="/usr/lib/cni"
CONTAINERD_BIN="/usr/bin/containerd"

# Daemons in start order; cluster-down stops them in reverse.
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy)

# Host paths that kubelet, containerd or CNI create outside the cluster
# directory whatever they are told. cluster-up records which of them did not
# exist before, and cluster-down removes exactly those.
HOST_PATHS=(
	/var/lib/kubelet            # device-plugin socket dir is hard-coded
	/var/log/containers         # kubelet's container log symlinks are hard-coded
	/var/lib/cni                # libcni's result cache
	/run/containerd             # containerd-shim sockets live in /run/containerd/s
	/run/xtables.lock
)

# Sysctls that kubelet (with protectKernelDefaults=false), kube-proxy and the
# CNI bridge plugin may set. Recorded before the first start, restored at down.
RECORDED_SYSCTLS=(
	vm.overcommit_memory
	vm.panic_on_oom
	kernel.panic
	kernel.panic_on_oops
	kernel.keys.root_maxkeys
	kernel.keys.root_maxbytes
	net.ipv4.ip_forward
	net.ipv4.conf.all.route_localnet
	net.ipv4.conf.all.forwarding
	net.ipv6.conf.all.forwarding
	net.bridge.bridge-nf-call-iptables
	net.bridge.bridge-nf-call-ip6tables
	net.netfilter.nf_conntrack_max
	net.netfilter.nf_conntrack_tcp_timeout_established
	net.netfilter.nf_conntrack_tcp_timeout_close_wait
	net.netfilter.nf_conntrack_tcp_be_liberal
)

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

pid_file() {
	echo "${PID_DIR}/$1.pid"
}

# daemon_pid NAME prints the pid of a running daemon started by cluster-up,
# or fails. A pid counts only while its executable is still the one we
# started, so a recycled pid never makes us signal a stranger.
daemon_pid() {
	local name="$1" file pid exe want
	file="$(pid_file "${name}")"
	[[ -f ${file} ]] || return 1
	pid="$(<"${file}")"
	[[ -n ${pid} && -d /proc/${pid} ]] || return 1
	exe="$(readlink "/proc/${pid}/exe" 2>/dev/null)" || return 1
	want="$(daemon_binary "${name}")"
	[[ ${exe%" (deleted)"} == "${want}" ]] || return 1
	echo "${pid}"
}

daemon_binary() {
	case "$1" in
	containerd) echo "${CONTAINERD_BIN}" ;;
	*) echo "${BIN_DIR}/$1" ;;
	esac
}

daemon_running() {
	daemon_pid "$1" >/dev/null
}
