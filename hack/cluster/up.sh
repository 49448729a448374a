#!/usr/bin/env bash
# cluster-up: a real single-node Kubernetes v1.34.4 on this machine, built
# from source (hack/cluster/build.sh) and started as plain processes: no
# Docker, no systemd, no registry. Idempotent: on a running cluster it only
# checks health and prints how to use it.
#
# All state, logs and pid files live in _cluster/ (HANGAR_CLUSTER_DIR). The
# host changes it makes (bridge, iptables chains, sysctls, cgroups, mounts)
# are undone by hack/cluster/down.sh. Settings: see hack/cluster/lib.sh.
#
# Usage: hack/cluster/up.sh
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${CLUSTER_SCRIPTS_DIR}/pki.sh"
source "${CLUSTER_SCRIPTS_DIR}/image.sh"

# nftables only for its nft CLI: down.sh deletes the (empty) nf_tables tables
# that iptables-nft creates and cannot delete itself.
DEBIAN_PACKAGES=(containerd runc containernetworking-plugins iptables nftables conntrack socat ipset
	busybox-static openssl curl iproute2 kmod util-linux)

ensure_packages() {
	local missing=() pkg
	for pkg in "${DEBIAN_PACKAGES[@]}"; do
		if [[ "$(dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null)" != "install ok installed" ]]; then
			missing+=("${pkg}")
		fi
	done
	((${#missing[@]} == 0)) && return 0
	log " installing ${missing[*]}"
	# Without systemd the packages' services cannot start; containerd is run
	# by this script with its own configuration instead.
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

check_socket_paths() {
	# sun_path holds 108 bytes; containerd's socket and shim paths derive from
	# the cluster directory.
	((${#CONTAINERD_SOCKET} < 100)) || die "HANGAR_CLUSTER_DIR is too long for unix sockets: ${CLUSTER_DIR}"
}

check_network_free() {
	# Our addresses must not collide with a network the host already uses,
	# unless it is our own bridge from a previous run.
	local line
	while read -r line; do
		[[ ${line} == *" dev ${BRIDGE} "* || ${line} == *" dev ${BRIDGE}" ]] && continue
		die "pod network ${POD_CIDR} overlaps a host route: ${line} (set HANGAR_POD_CIDR/HANGAR_NODE_IP)"
	done < <(ip -4 route show to match "${NODE_IP}" | grep -v '^default' || true)
}

# record_host_state saves, once per cluster lifetime, what down.sh must put
# back: original sysctl values and which host paths did not exist yet.
record_host_state() {
	mkdir -p "${HOST_STATE_DIR}"
	if [[ ! -f ${HOST_STATE_DIR}/sysctls ]]; then
		local key value
		for key in "${RECORDED_SYSCTLS[@]}"; do
			if value="$(sysctl -n "${key}" 2>/dev/null)"; then
				printf '%s=%s\n' "${key}" "${value}"
			fi
		done >"${HOST_STATE_DIR}/sysctls.tmp"
		mv "${HOST_STATE_DIR}/sysctls.tmp" "${HOST_STATE_DIR}/sysctls"
	fi
	if [[ ! -f ${HOST_STATE_DIR}/created-paths ]]; then
		local path
		for path in "${HOST_PATHS[@]}"; do
			[[ -e ${path} ]] || echo "${path}"
		done >"${HOST_STATE_DIR}/created-paths.tmp"
		mv "${HOST_STATE_DIR}/created-paths.tmp" "${HOST_STATE_DIR}/created-paths"
	fi
	if [[ ! -f ${HOST_STATE_DIR}/nft-tables ]]; then
		nft list tables >"${HOST_STATE_DIR}/nft-tables.tmp"
		mv "${HOST_STATE_DIR}/nft-tables.tmp" "${HOST_STATE_DIR}/nft-tables"
	fi
	if [[ ! -f ${HOST_STATE_DIR}/foreign-chains ]]; then
		# Chains of another Kubernetes on this host: down.sh must not touch them.
		{ iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } |
			grep -cE '^:(KUBE|CNI)-' >"${HOST_STATE_DIR}/foreign-chains" || true
	fi
}

ensure_kernel_features() {
	# Built into some kernels, modules on others. Loading a module is not
	# undone by down.sh: it changes no behaviour until something uses it.
	grep -qw overlay /proc/filesystems || modprobe overlay
	[[ -d /proc/sys/net/bridge ]] || modprobe br_netfilter
	# Pod -> Service -> pod on the same bridge needs bridged traffic to pass
	# iptables, or replies bypass the DNAT's conntrack entry.
	sysctl -q -w net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
}

# ensure_bridge creates the CNI bridge up front: the API server and kubelet
# listen on its gateway address, and they start before the first pod (which
# is when the bridge plugin would otherwise create it).
ensure_bridge() {
	local prefix="${POD_CIDR#*/}"
	if ! ip link show "${BRIDGE}" >/dev/null 2>&1; then
		ip link add "${BRIDGE}" type bridge
	fi
	if ! ip -4 addr show dev "${BRIDGE}" | grep -qw "${NODE_IP}/${prefix}"; then
		ip addr add "${NODE_IP}/${prefix}" dev "${BRIDGE}"
	fi
	ip link set "${BRIDGE}" up
}

write_cni_config() {
	mkdir -p "${CNI_CONF_DIR}" "${CNI_IPAM_DIR}"
	# No ipMasq: pods talk to the node and each other only, never beyond.
	# containerd adds the loopback interface itself (loopback plugin).
	cat >"${CNI_CONF_DIR}/10-hangar.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "hangar",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${CNI_IPAM_DIR}",
        "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${NODE_IP}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

write_containerd_config() {
	local state="${CONTAINERD_DIR}/state"
	mkdir -p "${CONTAINERD_DIR}/root" "${state}"
	cat >"${CONFIG_DIR}/containerd.toml" <<EOF
# Written by hack/cluster/up.sh; a containerd of its own beside any system one.
version = 2
root = "${CONTAINERD_DIR}/root"
state = "${state}"
# Snapshotters we do not use, and the "opt" plugin, which would create /opt/containerd.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "${CONTAINERD_SOCKET}"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  # Built locally by up.sh; nothing can be pulled.
  sandbox_image = "${PAUSE_IMAGE}"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  # Network namespaces under our state dir rather than /run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Devices a device plugin hands a container (/dev/kvm, /dev/net/tun, block volumes) are
  # owned by the container's runAsUser/runAsGroup: launcher pods run QEMU unprivileged, and
  # without systemd's udev rules these nodes are root's alone (mode 0600) on the host.
  device_ownership_from_security_context = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${state}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${CNI_CONF_DIR}"
    max_conf_num = 1
EOF
}

write_kubelet_config() {
	mkdir -p "${KUBELET_ROOT}" "${POD_LOG_DIR}"
	cat >"${CONFIG_DIR}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
tlsCertFile: ${PKI_DIR}/kubelet-serving.crt
tlsPrivateKeyFile: ${PKI_DIR}/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${PKI_DIR}/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${CONTAINERD_SOCKET}
imageServiceEndpoint: unix://${CONTAINERD_SOCKET}
# No systemd here; cgroups are v1.
cgroupDriver: cgroupfs
failSwapOn: false
# Negative oom_score_adj needs CAP_SYS_RESOURCE, which root lacks here.
oomScoreAdj: 0
# Node status (and extended resources from device plugins) shows up within
# seconds rather than the default 10 s.
nodeStatusUpdateFrequency: 3s
nodeStatusReportFrequency: 1m
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: ${POD_LOG_DIR}
# Images are imported by hand and cannot be pulled again: never GC them.
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%
  imagefs.available: 2%
serializeImagePulls: false
EOF
}

write_kube_proxy_config() {
	cat >"${CONFIG_DIR}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: ${NODE_NAME}
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:${PROXY_HEALTHZ_PORT}
metricsBindAddress: 127.0.0.1:${PROXY_METRICS_PORT}
clusterCIDR: ${POD_CIDR}
clientConnection:
  kubeconfig: ${CONFIG_DIR}/kube-proxy.kubeconfig
# NodePorts on the node IP only, not 127.0.0.1: that would set route_localnet.
nodePortAddresses: [primary]
iptables:
  localhostNodePorts: false
# Zeros leave the host's conntrack sysctls alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# start_daemon NAME ARGS... starts a daemon in its own session, logging to
# logs/NAME.log; the daemon writes its own pid (bash's exec keeps it). The
# daemon inherits no descriptor beyond stdio: fd 9, the cluster lock, or a lock
# of whoever called up.sh (flock LOCK hack/cluster/up.sh) would be held forever.
start_daemon() {
	local name="$1"
	shift
	if daemon_running "${name}"; then
		return 0
	fi
	local binary log
	binary="$(daemon_binary "${name}")"
	log="${LOG_DIR}/${name}.log"
	printf '\n===== %s start %s =====\n' "$(date -Is)" "${name}" >>"${log}"
	# shellcheck disable=SC2016 # $$ and "$@" belong to the inner bash
	setsid bash -c 'echo $$ >"$1"; shift
		for fd in /proc/$$/fd/*; do fd=${fd##*/}; if ((fd > 2)); then eval "exec ${fd}>&-"; fi; done
		exec "$@"' bash "$(pid_file "${name}")" \
		"${binary}" "$@" </dev/null >>"${log}" 2>&1 9>&- &
	wait_until 5 "${name} to start" daemon_running "${name}" || {
		tail -n 20 "${log}" >&2
		return 1
	}
}

# A failed readiness wait shows the end of the daemon's log at once.
wait_ready() {
	local name="$1" timeout="$2"
	shift 2
	if ! wait_until "${timeout}" "${name} to become ready" "$@"; then
		log "--- last lines of ${LOG_DIR}/${name}.log:"
		tail -n 30 "${LOG_DIR}/${name}.log" >&2
		return 1
	fi
}

start_etcd() {
	mkdir -p "${ETCD_DATA_DIR}"
	chmod 700 "${ETCD_DATA_DIR}"
	# Plain HTTP on loopback only. fsync is skipped unless
	# HANGAR_ETCD_FSYNC=true: the data is disposable and fsync dominates
	# write latency on a VM disk.
	local fsync=()
	[[ ${HANGAR_ETCD_FSYNC:-false} == true ]] || fsync=(--unsafe-no-fsync=true)
	start_daemon etcd \
		--name hangar \
		--data-dir "${ETCD_DATA_DIR}" \
		--listen-client-urls "http://127.0.0.1:${ETCD_PORT}" \
		--advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-cluster "hangar=http://127.0.0.1:${ETCD_PEER_PORT}" \
		--log-level warn \
		"${fsync[@]}"
	wait_ready etcd 30 curl -fsS "http://127.0.0.1:${ETCD_PORT}/health"
}

start_apiserver() {
	start_daemon kube-apiserver \
		--etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
		--bind-address "${NODE_IP}" \
		--advertise-address "${NODE_IP}" \
		--secure-port "${APISERVER_PORT}" \
		--tls-cert-file "${PKI_DIR}/apiserver.crt" \
		--tls-private-key-file "${PKI_DIR}/apiserver.key" \
		--client-ca-file "${PKI_DIR}/ca.crt" \
		--service-cluster-ip-range "${SERVICE_CIDR}" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "${PKI_DIR}/sa.pub" \
		--service-account-signing-key-file "${PKI_DIR}/sa.key" \
		--authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction \
		--allow-privileged=true \
		--kubelet-client-certificate "${PKI_DIR}/apiserver-kubelet-client.crt" \
		--kubelet-client-key "${PKI_DIR}/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "${PKI_DIR}/ca.crt" \
		--kubelet-preferred-address-types InternalIP \
		--requestheader-client-ca-file "${PKI_DIR}/front-proxy-ca.crt" \
		--requestheader-allowed-names front-proxy-client \
		--requestheader-username-headers X-Remote-User \
		--requestheader-group-headers X-Remote-Group \
		--requestheader-extra-headers-prefix X-Remote-Extra- \
		--proxy-client-cert-file "${PKI_DIR}/front-proxy-client.crt" \
		--proxy-client-key-file "${PKI_DIR}/front-proxy-client.key" \
		--enable-aggregator-routing=true \
		--profiling=false \
		--v=1
	wait_ready kube-apiserver 120 curl -fsS --cacert "${PKI_DIR}/ca.crt" \
		"https://${NODE_IP}:${APISERVER_PORT}/readyz"
}

start_controller_manager() {
	local kubeconfig="${CONFIG_DIR}/controller-manager.kubeconfig"
	start_daemon kube-controller-manager \
		--kubeconfig "${kubeconfig}" \
		--authentication-kubeconfig "${kubeconfig}" \
		--authorization-kubeconfig "${kubeconfig}" \
		--bind-address 127.0.0.1 \
		--secure-port "${CONTROLLER_MANAGER_PORT}" \
		--leader-elect=false \
		--cluster-name hangar \
		--use-service-account-credentials=true \
		--service-account-private-key-file "${PKI_DIR}/sa.key" \
		--root-ca-file "${PKI_DIR}/ca.crt" \
		--cluster-signing-cert-file "${PKI_DIR}/ca.crt" \
		--cluster-signing-key-file "${PKI_DIR}/ca.key" \
		--enable-garbage-collector=true \
		--profiling=false \
		--v=1
	wait_ready kube-controller-manager 60 curl -fsSk "https://127.0.0.1:${CONTROLLER_MANAGER_PORT}/healthz"
}

start_scheduler() {
	local kubeconfig="${CONFIG_DIR}/scheduler.kubeconfig"
	start_daemon kube-scheduler \
		--kubeconfig "${kubeconfig}" \
		--authentication-kubeconfig "${kubeconfig}" \
		--authorization-kubeconfig "${kubeconfig}" \
		--bind-address 127.0.0.1 \
		--secure-port "${SCHEDULER_PORT}" \
		--leader-elect=false \
		--profiling=false \
		--v=1
	wait_ready kube-scheduler 60 curl -fsSk "https://127.0.0.1:${SCHEDULER_PORT}/healthz"
}

start_containerd() {
	start_daemon containerd --config "${CONFIG_DIR}/containerd.toml"
	wait_ready containerd 30 ctr --address "${CONTAINERD_SOCKET}" version
}

# build_and_import_base_images: the sandbox (pause) image containerd needs
# for every pod, and a busybox image for tests, from Debian's busybox-static.
build_and_import_base_images() {
	local pause_tar busybox_tar
	pause_tar="$(image_tarball "${PAUSE_IMAGE}")"
	busybox_tar="$(image_tarball "${BUSYBOX_IMAGE}")"
	if [[ ! ${pause_tar} -nt ${BIN_DIR}/pause ]]; then
		build_image "${PAUSE_IMAGE}" -file "${BIN_DIR}/pause:/pause" -entrypoint /pause
	fi
	if [[ ! ${busybox_tar} -nt /bin/busybox ]]; then
		build_busybox_image
	fi
	import_image "${PAUSE_IMAGE}"
	import_image "${BUSYBOX_IMAGE}"
}

build_busybox_image() {
	local rootfs="${IMAGE_DIR}/busybox-rootfs"
	rm -rf "${rootfs}"
	mkdir -p "${rootfs}/bin" "${rootfs}/tmp" "${rootfs}/etc"
	cp /bin/busybox "${rootfs}/bin/busybox"
	local applet
	for applet in $(/bin/busybox --list); do
		[[ ${applet} == busybox ]] || ln -s busybox "${rootfs}/bin/${applet}"
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"${rootfs}/etc/passwd"
	echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"${rootfs}/etc/passwd"
	echo 'root:x:0:' >"${rootfs}/etc/group"
	build_image "${BUSYBOX_IMAGE}" -dir "${rootfs}" -cmd sh
	rm -rf "${rootfs}"
}

start_kubelet() {
	start_daemon kubelet \
		--config "${CONFIG_DIR}/kubelet.yaml" \
		--kubeconfig "${CONFIG_DIR}/kubelet.kubeconfig" \
		--root-dir "${KUBELET_ROOT}" \
		--hostname-override "${NODE_NAME}" \
		--node-ip "${NODE_IP}" \
		--v=1
	wait_ready kubelet 60 curl -fsS "http://127.0.0.1:${KUBELET_HEALTHZ_PORT}/healthz"
}

node_ready() {
	[[ "$(kubectl_admin get node "${NODE_NAME}" \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# node_ready_since TIME: Ready as reported by a kubelet heartbeat at or after
# TIME (RFC 3339, UTC). After a restart the stored node object still says
# Ready from the previous run; only a fresh heartbeat means this kubelet works.
node_ready_since() {
	local since="$1" condition
	condition="$(kubectl_admin get node "${NODE_NAME}" \
		-o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null)" ||
		return 1
	[[ ${condition%% *} == True && ! ${condition#* } < ${since} ]]
}

start_kube_proxy() {
	start_daemon kube-proxy --config "${CONFIG_DIR}/kube-proxy.yaml" --v=1
	wait_ready kube-proxy 60 curl -fsS "http://127.0.0.1:${PROXY_HEALTHZ_PORT}/healthz"
}

all_daemons_running() {
	local name
	for name in "${DAEMONS[@]}"; do
		daemon_running "${name}" || return 1
	done
}

print_usage() {
	cat <<EOF

Cluster is up: Kubernetes ${KUBE_VERSION}, node ${NODE_NAME} (${NODE_IP}), API https://${NODE_IP}:${APISERVER_PORT}
  export KUBECONFIG=${ADMIN_KUBECONFIG}
  export PATH=${BIN_DIR}:\$PATH
  kubectl get nodes
Images: hack/cluster/image.sh IMAGE -file SRC:/DEST -entrypoint /DEST   (pods use imagePullPolicy: Never)
Logs:   ${LOG_DIR}/
Stop:   hack/cluster/down.sh
EOF
}

generate_pki_and_kubeconfigs() {
	generate_pki
	write_kubeconfigs
}

main() {
	require_root
	local start=${SECONDS}

	# Quick path: a running, healthy cluster is left alone.
	if all_daemons_running && node_ready; then
		log "[up] cluster already running and node ${NODE_NAME} Ready ($((SECONDS - start))s)"
		print_usage
		return 0
	fi

	check_socket_paths
	mkdir -p "${CLUSTER_DIR}"
	lock_cluster_dir
	run_step up "debian packages" ensure_packages
	"${CLUSTER_SCRIPTS_DIR}/build.sh"
	mkdir -p "${CLUSTER_DIR}" "${LOG_DIR}" "${PID_DIR}" "${CONFIG_DIR}"
	check_network_free
	record_host_state
	ensure_kernel_features

	run_step up "pki and kubeconfigs" generate_pki_and_kubeconfigs
	write_cni_config
	write_containerd_config
	write_kubelet_config
	write_kube_proxy_config
	run_step up "bridge ${BRIDGE} ${NODE_IP}" ensure_bridge

	run_step up etcd start_etcd
	run_step up kube-apiserver start_apiserver
	run_step up kube-controller-manager start_controller_manager
	run_step up kube-scheduler start_scheduler
	run_step up containerd start_containerd
	run_step up "images ${PAUSE_IMAGE} ${BUSYBOX_IMAGE}" build_and_import_base_images
	# A kubelet that was already running has reported before; a new one must.
	local ready_check=(node_ready)
	daemon_running kubelet || ready_check=(node_ready_since "$(date -u +%Y-%m-%dT%H:%M:%SZ)")
	run_step up kubelet start_kubelet
	run_step up "node ${NODE_NAME} Ready" wait_ready kubelet 120 "${ready_check[@]}"
	run_step up kube-proxy start_kube_proxy

	log "[up] cluster up ($((SECONDS - start))s)"
	print_usage
}

main "$@"
