#!/usr/bin/env bash
# cluster-up: a real Kubernetes v1.34.4 of several nodes on this machine, built from source
# (hack/cluster/build.sh) and run as plain processes: no Docker, no systemd. Images are
# imported into the nodes (image.sh) or pulled from the cluster's own registry on the host
# (push.sh).
# Each node is a network and mount namespace of its own with its own containerd, kubelet and
# kube-proxy (hack/cluster/README.md). Idempotent: on a running cluster it only checks health.
#
# Usage: hack/cluster/up.sh [--nodes N]     (or HANGAR_NODES=N; default 1)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# nftables for its nft CLI (down of clusters made by older tooling), util-linux for
# unshare/nsenter, kmod for modprobe.
DEBIAN_PACKAGES=(runc containernetworking-plugins iptables nftables conntrack socat ipset
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
	# Without systemd no package's service starts; hangar-cluster runs its daemons itself.
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

require_root
run_step up "debian packages" ensure_packages
"${CLUSTER_SCRIPTS_DIR}/build.sh"
exec "${CLUSTER_TOOL}" up "$@"
