#!/usr/bin/env bash
# cluster-down: stops exactly what hack/cluster/up.sh started and undoes its
# changes to the host: pods and their network namespaces, mounts under the
# cluster directory, kubepods cgroups, the CNI bridge, KUBE-*/CNI-* iptables
# chains, sysctls (restored to the values recorded at the first up), and host
# paths that did not exist before. On a stopped cluster it changes nothing.
#
# The cluster's data (PKI, etcd, images, containerd content) stays in
# _cluster/ so the next up is fast; --purge deletes it too.
#
# Usage: hack/cluster/down.sh [--purge]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DID_SOMETHING=false

did() {
	DID_SOMETHING=true
	log "[down] $*"
}

# process_alive PID: a zombie counts as gone; the daemons' parent (up.sh) has
# exited, so whoever reaps them may take its time.
process_alive() {
	local state
	state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
	[[ -n ${state} && ${state} != Z && ${state} != X ]]
}

# stop_daemon NAME GRACE_SECONDS: SIGTERM, then SIGKILL after the grace
# period. kube-apiserver gets a short one: it would drain watches for ~60 s.
stop_daemon() {
	local name="$1" grace="$2" pid
	if ! pid="$(daemon_pid "${name}")"; then
		rm -f "$(pid_file "${name}")"
		return 0
	fi
	local start=${SECONDS}
	kill -TERM "${pid}" 2>/dev/null || true
	local deadline=$((SECONDS + grace))
	while process_alive "${pid}" && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if process_alive "${pid}"; then
		kill -KILL "${pid}" 2>/dev/null || true
		while process_alive "${pid}"; do sleep 0.05; done
		did "stopped ${name} (pid ${pid}, SIGKILL after ${grace}s)"
	else
		did "stopped ${name} (pid ${pid}, $((SECONDS - start))s)"
	fi
	rm -f "$(pid_file "${name}")"
}

# remove_pods goes through CRI while containerd still runs, so each pod's
# CNI DEL releases its IP, veth and portmap rules.
remove_pods() {
	daemon_running containerd || return 0
	[[ -x ${BIN_DIR}/crireset ]] || return 0
	local output
	if output="$("${BIN_DIR}/crireset" -endpoint "unix://${CONTAINERD_SOCKET}" -timeout 90s 2>&1)"; then
		[[ -z ${output} ]] || did "removed pods: $(grep -c 'removed pod sandbox' <<<"${output}") sandboxes"
	else
		log "${output}"
		log "[down] warning: some pods could not be removed through CRI; cleaning up by force"
	fi
}

# pids_of_shims lists containerd-shim processes serving our containerd,
# recognised by their exact "-address <our socket>" argument.
pids_of_shims() {
	local dir args
	for dir in /proc/[0-9]*; do
		args="$(tr '\0' ' ' 2>/dev/null <"${dir}/cmdline")" || continue
		[[ ${args} == *containerd-shim* && ${args} == *" -address ${CONTAINERD_SOCKET} "* ]] &&
			echo "${dir#/proc/}"
	done
	return 0
}

kubepods_cgroups() {
	local hierarchy
	for hierarchy in /sys/fs/cgroup /sys/fs/cgroup/*; do
		[[ -d ${hierarchy}/kubepods ]] && echo "${hierarchy}/kubepods"
	done
	return 0
}

# kill_leftover_processes: anything still inside kubepods cgroups or a shim
# of ours belongs to a pod that CRI could not remove.
kill_leftover_processes() {
	local pids=() cgroup pid
	for cgroup in $(kubepods_cgroups); do
		while read -r pid; do
			[[ -n ${pid} ]] && pids+=("${pid}")
		done < <(find "${cgroup}" -name cgroup.procs -exec cat {} + 2>/dev/null)
	done
	while read -r pid; do
		[[ -n ${pid} ]] && pids+=("${pid}")
	done < <(pids_of_shims)
	((${#pids[@]} == 0)) && return 0
	mapfile -t pids < <(printf '%s\n' "${pids[@]}" | sort -un)
	kill -KILL "${pids[@]}" 2>/dev/null || true
	did "killed ${#pids[@]} leftover pod/shim processes"
	sleep 0.5
}

remove_kubepods_cgroups() {
	local cgroup removed=0
	for cgroup in $(kubepods_cgroups); do
		# rmdir deepest first; a cgroup directory is removed with rmdir, not rm.
		while read -r dir; do
			rmdir "${dir}" 2>/dev/null && removed=$((removed + 1))
		done < <(find "${cgroup}" -depth -type d)
		[[ -d ${cgroup} ]] && log "[down] warning: could not remove ${cgroup}"
	done
	((removed == 0)) || did "removed ${removed} kubepods cgroups"
}

# cluster_mounts lists mount points at or below the cluster directory,
# deepest first (findmnt escapes blanks as \040; our paths have none).
cluster_mounts() {
	findmnt -rn -o TARGET | awk -v dir="${CLUSTER_DIR}" '$0 == dir || index($0, dir "/") == 1' |
		awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-
}

unmount_cluster() {
	local count=0 mount
	# Several passes: mounts can be stacked on the same point.
	for _ in 1 2 3 4 5; do
		local mounts
		mounts="$(cluster_mounts)"
		[[ -z ${mounts} ]] && break
		while read -r mount; do
			umount "${mount}" 2>/dev/null || umount -l "${mount}" 2>/dev/null || true
			count=$((count + 1))
		done <<<"${mounts}"
	done
	[[ -z "$(cluster_mounts)" ]] || log "[down] warning: mounts remain under ${CLUSTER_DIR}"
	((count == 0)) || did "unmounted ${count} mounts under ${CLUSTER_DIR}"
}

remove_bridge() {
	ip link show "${BRIDGE}" >/dev/null 2>&1 || return 0
	ip link del "${BRIDGE}"
	did "deleted bridge ${BRIDGE}"
}

# remove_iptables_chains drops every KUBE-*/CNI-* chain and every rule that
# jumps to one, table by table, by restoring a filtered dump: the rest of
# each table is restored exactly as it was.
remove_iptables_chains() {
	if [[ -f ${HOST_STATE_DIR}/foreign-chains && "$(<"${HOST_STATE_DIR}/foreign-chains")" != 0 ]]; then
		log "[down] warning: KUBE-/CNI- chains existed before the first up; leaving iptables alone"
		return 0
	fi
	local family table dump
	for family in iptables ip6tables; do
		command -v "${family}-save" >/dev/null || continue
		for table in filter nat mangle raw; do
			dump="$("${family}-save" -t "${table}" 2>/dev/null)" || continue
			grep -qE '^:(KUBE|CNI)-' <<<"${dump}" || continue
			awk '!/^:(KUBE|CNI)-/ && !/^-A (KUBE|CNI)-/ && !/ -[jg] (KUBE|CNI)-/' <<<"${dump}" |
				"${family}-restore" -w 5
			did "removed KUBE-/CNI- chains from ${family} ${table}"
		done
	done
}

# remove_new_nft_tables deletes the nf_tables tables (ip filter, ip6 nat...)
# that iptables-nft created for kubelet and kube-proxy, once they hold no
# rules and no chains of their own. Tables that existed before the first up,
# or that something else filled meanwhile, stay.
remove_new_nft_tables() {
	local recorded="${HOST_STATE_DIR}/nft-tables" table content
	[[ -f ${recorded} ]] && command -v nft >/dev/null || return 0
	while read -r table; do
		[[ -n ${table} ]] || continue
		grep -qxF "${table}" "${recorded}" && continue
		# shellcheck disable=SC2086 # "table FAMILY NAME" splits on purpose
		content="$(nft list ${table} 2>/dev/null)" || continue
		# Left over: only the table, base chains ("type ... hook ...") and braces.
		if grep -vqE '^\s*(table |chain (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) \{|type .* hook |\}|$)' <<<"${content}"; then
			continue
		fi
		# shellcheck disable=SC2086
		nft delete ${table} && did "deleted empty nf_tables ${table#table }"
	done < <(nft list tables 2>/dev/null)
	rm -f "${recorded}"
}

restore_sysctls() {
	local file="${HOST_STATE_DIR}/sysctls" line key want have
	[[ -f ${file} ]] || return 0
	while IFS= read -r line; do
		key="${line%%=*}"
		want="${line#*=}"
		have="$(sysctl -n "${key}" 2>/dev/null)" || continue
		[[ ${have} == "${want}" ]] && continue
		sysctl -q -w "${key}=${want}" && did "restored ${key}=${want} (was ${have})"
	done <"${file}"
	rm -f "${file}"
}

# remove_created_host_paths removes the host paths that did not exist before
# the first up. Directories other components might have started to share
# meanwhile lose only what is ours: symlinks into the cluster directory and
# empty directories; anything else in them stays, with a warning.
remove_created_host_paths() {
	local file="${HOST_STATE_DIR}/created-paths" path
	[[ -f ${file} ]] || return 0
	while IFS= read -r path; do
		[[ -n ${path} && -e ${path} ]] || continue
		case "${path}" in
		/var/lib/kubelet)
			# Only a kubelet writes here (device-plugin socket, checkpoint).
			rm -rf --one-file-system "${path}"
			;;
		/run/containerd)
			# Shim sockets of ours; a system containerd would have its socket here.
			if [[ -S ${path}/containerd.sock ]]; then
				log "[down] warning: a containerd now uses ${path}; leaving it"
				continue
			fi
			rm -rf --one-file-system "${path}"
			;;
		/var/lib/cni)
			# libcni's cache, entries named "<network>-<sandbox id>-<if>": our
			# network and containerd's loopback. CNI DEL removes them; a pod
			# killed without one leaves them.
			find "${path}" -type f \( -path "${path}/results/hangar-*" -o -path "${path}/results/cni-loopback-*" \) -delete
			find "${path}" -depth -type d -empty -delete
			;;
		*)
			if [[ -d ${path} ]]; then
				find "${path}" -type l -lname "${CLUSTER_DIR}/*" -delete
				find "${path}" -depth -type d -empty -delete
			else
				rm -f "${path}"
			fi
			;;
		esac
		if [[ -e ${path} ]]; then
			log "[down] warning: ${path} holds files that are not ours; leaving it"
		else
			did "removed ${path}"
		fi
	done <"${file}"
	rm -f "${file}" "${HOST_STATE_DIR}/foreign-chains"
}

main() {
	local purge=false
	[[ ${1:-} == --purge ]] && purge=true
	require_root
	# A stopped cluster without a directory stays without one.
	[[ -d ${CLUSTER_DIR} ]] && lock_cluster_dir
	local start=${SECONDS}

	# kubelet first, so it does not restart what we remove; containerd stays
	# up until CRI has removed every pod.
	stop_daemon kubelet 10
	remove_pods
	stop_daemon kube-proxy 5
	stop_daemon containerd 10
	kill_leftover_processes
	stop_daemon kube-scheduler 5
	stop_daemon kube-controller-manager 5
	stop_daemon kube-apiserver 3
	stop_daemon etcd 10

	remove_kubepods_cgroups
	unmount_cluster
	remove_bridge
	remove_iptables_chains
	remove_new_nft_tables
	restore_sysctls
	remove_created_host_paths

	if [[ ${purge} == true && -d ${CLUSTER_DIR} ]]; then
		[[ -z "$(cluster_mounts)" ]] || die "mounts remain under ${CLUSTER_DIR}; not deleting it"
		rm -rf --one-file-system "${CLUSTER_DIR}"
		did "deleted ${CLUSTER_DIR}"
	fi

	if [[ ${DID_SOMETHING} == true ]]; then
		log "[down] cluster down, host restored ($((SECONDS - start))s)"
	else
		log "[down] nothing to do: no cluster running"
	fi
}

main "$@"
