#!/usr/bin/env bash
# Builds a release of this checkout: every component's binary stamped with the version
# (hack/version.sh), their images (by the project's own image builder, no Docker engine:
# static binaries on an empty image; virt-handler and virt-launcher on one Debian root file
# system, hack/build-node-images.sh), pushed to REGISTRY, and the install artifacts with the
# images pinned by digest (hack/release): hangar.yaml, hangar-cr.yaml and the Helm chart
# chart/hangar, in _output/release/VERSION (or --out). Needs root (debootstrap).
#
# Usage: hack/release.sh --registry REGISTRY [--ca FILE] [--no-push] [--out DIR]
#   REGISTRY: where the images go, e.g. registry.example.com/hangar or, for the local cluster,
#   what `hangar-cluster registry` prints; --ca: trust only this CA for it. --no-push writes
#   each image as a tarball (DIR/images) instead, with the digest it would have.
# Prints the output directory last.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

REGISTRY="" CA="" PUSH=true OUT=""
while (($#)); do
	case $1 in
	--registry) REGISTRY=$2; shift 2 ;;
	--ca) CA=$2; shift 2 ;;
	--no-push) PUSH=false; shift ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "usage: $0 --registry REGISTRY [--ca FILE] [--no-push] [--out DIR]" >&2; exit 2 ;;
	esac
done
[[ -n ${REGISTRY} ]] || { echo "release: --registry is required (images are named after it)" >&2; exit 2; }

eval "$(hack/version.sh)"
LDFLAGS=$(hack/version.sh --ldflags)
OUT=$(realpath -m "${OUT:-_output/release/${HANGAR_VERSION}}")
BIN=${OUT}/bin
mkdir -p "${BIN}" "${OUT}/images"
echo "${HANGAR_VERSION}" >"${OUT}/version"

step() {
	local name=$1 start=${SECONDS}
	shift
	echo "[release] ${name} ..." >&2
	"$@"
	echo "[release] ${name} ($((SECONDS - start))s)" >&2
}

build_binaries() {
	local c
	for c in virt-api virt-controller hangar-operator virtctl hangar-copy virt-exportserver; do
		CGO_ENABLED=0 go build -trimpath -ldflags "${LDFLAGS}" -o "${BIN}/${c}" "./cmd/${c}"
	done
	# cgo: linked against the Debian libvirt the node image carries.
	hack/install-node-deps.sh >&2
	for c in virt-handler virt-launcher; do
		go build -trimpath -ldflags "${LDFLAGS}" -o "${BIN}/${c}" "./cmd/${c}"
	done
	CGO_ENABLED=0 go -C hack/tools build -trimpath -o "${BIN}/etcd" ./cmd/etcd
	go -C hack/tools build -o "${BIN}/imagebuild" ./cmd/imagebuild
}

# image NAME IMAGEBUILD-FLAGS...: builds REGISTRY/NAME:VERSION, pushes it (or writes its
# tarball) and records it pinned by digest in images.env.
image() {
	local name=$1 ref out digest
	shift
	ref="${REGISTRY}/${name}:${HANGAR_VERSION}"
	if [[ ${PUSH} == true ]]; then
		out=$("${BIN}/imagebuild" -image "${ref}" -push ${CA:+-ca "${CA}"} "$@")
	else
		out=$("${BIN}/imagebuild" -image "${ref}" -out "${OUT}/images/${name}.tar" "$@")
	fi
	digest=${out##* }
	[[ ${digest} == sha256:* ]] || { echo "release: imagebuild printed no digest for ${ref}" >&2; return 1; }
	echo "${name}=${ref}@${digest}" >>"${OUT}/images.env"
	echo "[release]   ${ref}@${digest}" >&2
}

build_images() {
	: >"${OUT}/images.env"
	local c rootfs
	for c in virt-api virt-controller hangar-operator etcd; do
		image "${c}" -file "${BIN}/${c}:/usr/bin/${c}" -entrypoint "/usr/bin/${c}"
	done
	rootfs=$(NODE_BIN_DIR=${BIN} hack/build-node-images.sh --rootfs | tail -n1)
	[[ -d ${rootfs} ]] || { echo "release: no node root file system (${rootfs})" >&2; return 1; }
	image virt-launcher -dir "${rootfs}" -entrypoint /usr/bin/virt-launcher
	image virt-handler -dir "${rootfs}" -entrypoint /usr/bin/virt-handler
}

render() {
	local kubectl=kubectl
	[[ -x _output/bin/kubectl ]] && kubectl=_output/bin/kubectl
	"${kubectl}" kustomize artifacts/install >"${OUT}/install.yaml"
	go run ./hack/release -version "${HANGAR_VERSION}" -images "${OUT}/images.env" -install "${OUT}/install.yaml" \
		-cr artifacts/examples/hangar.yaml -out "${OUT}"
}

start=${SECONDS}
echo "[release] ${HANGAR_VERSION} (${HANGAR_COMMIT}, ${HANGAR_TREE_STATE}) to ${REGISTRY}" >&2
step binaries build_binaries
step images build_images
step manifests render
echo "[release] ${HANGAR_VERSION} done ($((SECONDS - start))s): ${OUT}/hangar.yaml, ${OUT}/chart/hangar" >&2
echo "${OUT}"
