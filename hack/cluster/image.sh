#!/usr/bin/env bash
# Builds a single-layer image locally and imports it into the cluster's
# containerd (namespace k8s.io, where kubelet looks). The cluster cannot pull
# from a registry, so this is how any image gets onto the node; pods then use
# imagePullPolicy: Never or IfNotPresent.
#
# Usage: hack/cluster/image.sh IMAGE IMAGEBUILD-FLAGS...
#   hack/cluster/image.sh hangar.local/virt-api:dev \
#       -file _output/bin/virt-api:/usr/bin/virt-api -entrypoint /usr/bin/virt-api
#   hack/cluster/image.sh hangar.local/tool:dev -dir path/to/rootfs -cmd '["/tool","-v"]'
# Flags are imagebuild's (-dir, -file, -tar, -entrypoint, -cmd, -env,
# -workdir, -user); run _output/bin/imagebuild -h for details.
#
# Sourced by up.sh for build_image / import_image.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ctr_k8s() {
	ctr --address "${CONTAINERD_SOCKET}" --namespace k8s.io "$@"
}

image_tarball() {
	local ref="$1"
	echo "${IMAGE_DIR}/$(tr '/:' '__' <<<"${ref}").tar"
}

# build_image IMAGE FLAGS... writes the image's docker-archive tarball.
# imagebuild is deterministic, so an unchanged input yields an identical file.
build_image() {
	local ref="$1"
	shift
	mkdir -p "${IMAGE_DIR}"
	"${BIN_DIR}/imagebuild" -image "${ref}" -out "$(image_tarball "${ref}")" "$@" >/dev/null
}

image_present() {
	[[ -n "$(ctr_k8s images ls -q "name==$1" 2>/dev/null)" ]]
}

# import_image IMAGE imports the tarball unless containerd already holds
# exactly this tarball's content under that name.
import_image() {
	local ref="$1" tarball sum
	tarball="$(image_tarball "${ref}")"
	[[ -f ${tarball} ]] || die "no tarball for ${ref}; build it first"
	sum="$(sha256sum "${tarball}" | cut -d' ' -f1)"
	if image_present "${ref}" && [[ -f ${tarball}.imported && "$(<"${tarball}.imported")" == "${sum}" ]]; then
		return 0
	fi
	ctr_k8s images import --snapshotter overlayfs "${tarball}" >/dev/null
	image_present "${ref}" || die "containerd does not list ${ref} after importing ${tarball}"
	echo "${sum}" >"${tarball}.imported"
}

image_main() {
	(($# >= 2)) || die "usage: $(basename "$0") IMAGE IMAGEBUILD-FLAGS... (see the header of this script)"
	require_root
	daemon_running containerd || die "the cluster's containerd is not running; run hack/cluster/up.sh first"
	local ref="$1"
	shift
	run_step image "build ${ref}" build_image "${ref}" "$@"
	run_step image "import ${ref}" import_image "${ref}"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	image_main "$@"
fi
