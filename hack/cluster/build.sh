#!/usr/bin/env bash
# Builds the local cluster's binaries from the tools module (hack/tools) into
# _output/bin: the Kubernetes v1.34.4 servers, kubectl, etcd, the pause
# program, hangar-cluster (up/down) and its helpers, and, pinned versions from
# the Go module proxy, containerd, the add-ons CoreDNS and local-path-provisioner,
# the OCI registry (distribution's) that runs on the host, and Helm, which installs Hangar's
# chart in the installer tests.
#
# With HANGAR_CLUSTER_SNAPSHOTS=1 it builds the snapshot add-on too: hangar-local-csi (the
# cluster's CSI driver, hack/tools/cmd/hangar-local-csi), and, pinned from the module proxy,
# external-snapshotter's snapshot-controller and csi-snapshotter and external-provisioner's
# csi-provisioner. Without it nothing of that is built.
#
# A binary is rebuilt only when it is missing or when the tools module (its
# go.mod, go.sum or sources) or the Go version changed since it was built. A
# cold build takes ~15-20 min on 2 cores; a relink from a warm Go build cache
# takes seconds.
#
# Usage: hack/cluster/build.sh [--force]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Kubernetes servers come straight from the k8s.io/kubernetes module.
KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# Our own small programs in hack/tools/cmd (cmd/cluster is installed as hangar-cluster).
TOOL_COMMANDS=(etcd pause imagebuild crireset cluster loop-provisioner)
# Add-ons, built with `go install MODULE@VERSION` outside the tools module (their dependency
# graphs stay out of Kubernetes'); the versions are those hangar-cluster deploys. The registry
# is distribution's, without the cloud storage drivers' build tags (it stores on disk).
ADDONS=(github.com/coredns/coredns@v1.14.6 github.com/rancher/local-path-provisioner@v0.0.30
	github.com/distribution/distribution/v3/cmd/registry@v3.1.2 helm.sh/helm/v3/cmd/helm@v3.22.0)
# The nodes' containerd, its runc shim and ctr: Debian's 1.6 cannot mount image volumes.
# Without cgo and the snapshotters
# that need it (the nodes use overlayfs); runc stays Debian's.
CONTAINERD_VERSION=v2.2.9
CONTAINERD_COMMANDS=(containerd containerd-shim-runc-v2 ctr)
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs"

# The snapshot add-on (HANGAR_CLUSTER_SNAPSHOTS=1): the versions hangar-cluster deploys.
SNAPSHOTTER_SPEC=github.com/kubernetes-csi/external-snapshotter/v8@v8.7.0
SNAPSHOTTER_COMMANDS=(snapshot-controller csi-snapshotter)
PROVISIONER_SPEC=github.com/kubernetes-csi/external-provisioner/v5@v5.3.0
PROVISIONER_COMMANDS=(csi-provisioner)

STAMP_DIR="${BIN_DIR}/.stamps"

# tools_fingerprint identifies everything a binary's content depends on: the
# tools module and the Go toolchain. The Go build cache makes a rebuild with
# an unchanged fingerprint pointless.
tools_fingerprint() {
	{
		go version
		(cd "${TOOLS_DIR}" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 |
			sort -z | xargs -0 sha256sum)
		printf '%s\n' "${KUBE_VERSION}"
	} | sha256sum | cut -d' ' -f1
}

# version_ldflags makes the servers report a real version (kubectl version,
# /version, node status) instead of v0.0.0-master. The build date is the
# release's, so relinking never changes a binary needlessly.
version_ldflags() {
	local major minor
	major="${KUBE_VERSION#v}"
	major="${major%%.*}"
	minor="${KUBE_VERSION#v*.}"
	minor="${minor%%.*}"
	local pkg flags=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
		flags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
		flags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.gitCommit="
		flags+=" -X ${pkg}.buildDate=2026-02-10T12:53:36Z"
	done
	echo "${flags# }"
}

needs_build() {
	local name="$1" fingerprint="$2"
	[[ ${FORCE} == true ]] && return 0
	[[ -x ${BIN_DIR}/${name} ]] || return 0
	[[ -f ${STAMP_DIR}/${name} && "$(<"${STAMP_DIR}/${name}")" == "${fingerprint}" ]] || return 0
	return 1
}

# go_build NAME PACKAGE [ENV...] builds into a temporary file and renames it,
# so a running daemon keeps its binary and an interrupted build leaves none.
go_build() {
	local name="$1" pkg="$2"
	shift 2
	local out="${BIN_DIR}/.${name}.tmp"
	env "$@" go -C "${TOOLS_DIR}" build -buildvcs=false -ldflags "${LDFLAGS}" -o "${out}" "${pkg}"
	mv -f "${out}" "${BIN_DIR}/${name}"
}

build_one() {
	local name="$1" pkg="$2" fingerprint="$3"
	shift 3
	if ! needs_build "${name}" "${fingerprint}"; then
		return 0
	fi
	run_step build "${name}" go_build "${name}" "${pkg}" "$@"
	echo "${fingerprint}" >"${STAMP_DIR}/${name}"
}

# build_addon MODULE@VERSION [TAGS]: a static binary (it runs in a scratch image, or on the
# host) named after the package's last element, rebuilt only when the version changes.
build_addon() {
	local spec="$1" tags="${2:-}" name stamp
	name="${spec%@*}"
	name="${name##*/}"
	stamp="$(go version) ${spec}${tags:+ ${tags}}"
	if [[ ${FORCE} != true && -x ${BIN_DIR}/${name} && -f ${STAMP_DIR}/${name} && "$(<"${STAMP_DIR}/${name}")" == "${stamp}" ]]; then
		return 0
	fi
	local gobin
	gobin="$(mktemp -d)"
	# Outside any module: go install builds MODULE@VERSION with its own go.mod.
	run_step build "${name} ${spec#*@}" env -C / GOBIN="${gobin}" GOFLAGS= CGO_ENABLED=0 go install -tags "${tags}" -ldflags "-s -w" "${spec}"
	mv -f "${gobin}/${name}" "${BIN_DIR}/${name}"
	rm -rf "${gobin}"
	echo "${stamp}" >"${STAMP_DIR}/${name}"
}

# build_replaced MODULE@VERSION COMMAND...: static binaries of MODULE/cmd/COMMAND for modules
# that `go install` refuses because their go.mod has replace directives (the CSI sidecars
# pin Kubernetes' staging modules that way). They are built in a throwaway module whose go.mod
# is a copy of theirs, so the build list is exactly their release's, plus a requirement on
# the module itself; a replacement by a local directory (external-snapshotter's ./client, a
# module of the same repository that the module's zip leaves out) becomes that module at the
# same version from the proxy. Rebuilt only when the version or Go changes.
build_replaced() {
	local spec="$1" module="${1%@*}" version="${1#*@}" stamp name need=false
	shift
	stamp="$(go version) ${spec}"
	for name in "$@"; do
		if [[ ${FORCE} == true || ! -x ${BIN_DIR}/${name} || ! -f ${STAMP_DIR}/${name} || "$(<"${STAMP_DIR}/${name}")" != "${stamp}" ]]; then
			need=true
		fi
	done
	[[ ${need} == true ]] || return 0
	local dir work local_module
	dir="$(env -C / GOFLAGS= go mod download -json "${spec}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[[ -f ${dir}/go.mod ]] || die "go mod download ${spec}: no module directory"
	work="$(mktemp -d)"
	cp "${dir}/go.mod" "${dir}/go.sum" "${work}/"
	chmod u+w "${work}/go.mod" "${work}/go.sum"
	for local_module in $(sed -nE 's#^(replace)?[[:space:]]*([^[:space:]]+)([[:space:]]+v[^[:space:]]+)?[[:space:]]+=>[[:space:]]+\.\.?/.*#\2#p' "${work}/go.mod"); do
		go -C "${work}" mod edit -dropreplace "${local_module}" -require "${local_module}@${version}"
	done
	go -C "${work}" mod edit -module hangar.local/build/sidecars -require "${spec}"
	for name in "$@"; do
		run_step build "${name} ${version}" env -C "${work}" GOFLAGS=-mod=mod CGO_ENABLED=0 \
			go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${BIN_DIR}/.${name}.tmp" "${module}/cmd/${name}"
		mv -f "${BIN_DIR}/.${name}.tmp" "${BIN_DIR}/${name}"
		echo "${stamp}" >"${STAMP_DIR}/${name}"
	done
	rm -rf "${work}"
}

main() {
	FORCE=false
	if [[ ${1:-} == --force ]]; then
		FORCE=true
	fi
	command -v go >/dev/null || die "go is not installed"
	mkdir -p "${BIN_DIR}" "${STAMP_DIR}"

	local start=${SECONDS} fingerprint
	fingerprint="$(tools_fingerprint)"
	LDFLAGS="$(version_ldflags)"

	# The module cache may be cold on a fresh machine: download once, visibly,
	# instead of inside the first build step.
	if [[ ${FORCE} == true ]] || ! [[ -f ${STAMP_DIR}/.modules && "$(<"${STAMP_DIR}/.modules")" == "${fingerprint}" ]]; then
		run_step build "go mod download" go -C "${TOOLS_DIR}" mod download
		echo "${fingerprint}" >"${STAMP_DIR}/.modules"
	fi

	local name
	for name in "${KUBE_COMMANDS[@]}"; do
		build_one "${name}" "k8s.io/kubernetes/cmd/${name}" "${fingerprint}"
	done
	for name in "${TOOL_COMMANDS[@]}"; do
		case "${name}" in
		# pause runs as PID 1 of every pod sandbox inside a scratch image:
		# it must be static.
		pause) build_one pause ./cmd/pause "${fingerprint}" CGO_ENABLED=0 ;;
		cluster) build_one hangar-cluster ./cmd/cluster "${fingerprint}" ;;
		*) build_one "${name}" "./cmd/${name}" "${fingerprint}" ;;
		esac
	done
	local addon
	for addon in "${ADDONS[@]}"; do
		build_addon "${addon}"
	done
	for name in "${CONTAINERD_COMMANDS[@]}"; do
		build_addon "github.com/containerd/containerd/v2/cmd/${name}@${CONTAINERD_VERSION}" "${CONTAINERD_TAGS}"
	done
	if [[ ${HANGAR_CLUSTER_SNAPSHOTS:-} == 1 ]]; then
		# Static: it runs on the host in a node's namespaces, and may run in an image later.
		build_one hangar-local-csi ./cmd/hangar-local-csi "${fingerprint}" CGO_ENABLED=0
		build_replaced "${SNAPSHOTTER_SPEC}" "${SNAPSHOTTER_COMMANDS[@]}"
		build_replaced "${PROVISIONER_SPEC}" "${PROVISIONER_COMMANDS[@]}"
	fi
	log "[build] binaries up to date in ${BIN_DIR} ($((SECONDS - start))s)"
}

main "$@"
