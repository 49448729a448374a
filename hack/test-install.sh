#!/usr/bin/env bash
# The installer tests on the local cluster, which they treat as a foreign one: releases pushed
# to its registry, installed, upgraded and removed with their manifests and Helm chart only
# (test/e2e/install_test.go, build tags e2e and install).
#
#   hack/test-install.sh releases    build this checkout's release and the previous one (the
#                                    newest of hack/releases this checkout descends from,
#                                    built from its own commit in a worktree), print their dirs
#   hack/test-install.sh TEST...     run installer tests (TestInstallerUpgrade, ...) against
#                                    the releases built last
#
# The local cluster must run (hack/cluster/up.sh). Needs root.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"
cd "${REPO_ROOT}"

STATE="${REPO_ROOT}/_output/install-test"
mkdir -p "${STATE}"

# previous_release prints "NAME COMMIT" of the newest release this checkout descends from that
# is not this commit itself.
previous_release() {
	local head name commit found=""
	head=$(git rev-parse HEAD)
	while read -r name commit; do
		[[ -z ${name} || ${name} == \#* ]] && continue
		git cat-file -e "${commit}^{commit}" 2>/dev/null || git fetch --quiet origin "${commit}" 2>/dev/null ||
			die "release ${name}: commit ${commit} is not in this clone (fetch it, or clone without --depth)"
		if [[ $(git rev-parse "${commit}") != "${head}" ]] && git merge-base --is-ancestor "${commit}" HEAD; then
			found="${name} ${commit}"
		fi
	done <hack/releases
	[[ -n ${found} ]] || die "hack/releases names no release before this commit: the upgrade test has nothing to upgrade from"
	echo "${found}"
}

# registry_has REF@DIGEST says whether the cluster's registry holds an image.
registry_has() {
	local ref=$1 repo digest
	repo=${ref#*/}
	repo=${repo%%:*}
	digest=${ref##*@}
	curl -sf -o /dev/null --cacert "${HANGAR_REGISTRY_CA}" -I \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
		"https://${HANGAR_REGISTRY}/v2/${repo}/manifests/${digest}"
}

# build_previous NAME COMMIT builds a release from its own commit, unless its images are in the
# registry already.
build_previous() {
	local name=$1 commit=$2 out="${STATE}/previous-${1}" src="${STATE}/src-${1}" line ok=true
	if [[ -f ${out}/images.env ]]; then
		while IFS= read -r line; do
			registry_has "${line#*=}" || ok=false
		done <"${out}/images.env"
		if [[ ${ok} == true ]]; then
			log "[install-test] release ${name}: images in the registry already"
			echo "${out}"
			return 0
		fi
	fi
	if [[ ! -d ${src} ]]; then
		git worktree add --force --detach "${src}" "${commit}" >&2
	fi
	# The node root file system's debootstrap is cached per package list: share it.
	mkdir -p "${src}/_output" "${REPO_ROOT}/_output/launcher-image"
	ln -sfn "${REPO_ROOT}/_output/launcher-image" "${src}/_output/launcher-image"
	# Releases before Node.js left the build ran npm from their package script (the browser
	# tests' packages, which no release holds): the old commit gets this checkout's script,
	# which installs the same Debian packages the release's cgo build needs and calls no Node.js.
	cp -f "${REPO_ROOT}/hack/install-node-deps.sh" "${src}/hack/install-node-deps.sh"
	rm -rf "${out}"
	(cd "${src}" && HANGAR_RELEASE_VERSION=${name} hack/release.sh --registry "${HANGAR_REGISTRY}/hangar" \
		--ca "${HANGAR_REGISTRY_CA}" --out "${out}") >&2 || die "release ${name} (${commit}) failed to build"
	[[ -f ${out}/hangar.yaml && -f ${out}/images.env ]] || die "release ${name}: no hangar.yaml or images.env in ${out}"
	# A release's version, as its images' tags say (a release.sh before the version file's).
	if [[ ! -f ${out}/version ]]; then
		line=$(grep '^virt-api=' "${out}/images.env")
		line=${line%@*}
		echo "${line##*:}" >"${out}/version"
	fi
	echo "${out}"
}

releases() {
	eval "$("${CLUSTER_TOOL}" registry)"
	local current previous
	read -r name commit < <(previous_release)
	# Checked by hand: errexit does not reach into a command substitution.
	previous=$(build_previous "${name}" "${commit}" | tail -n1) || die "the previous release ${name} did not build"
	current=$(hack/release.sh --registry "${HANGAR_REGISTRY}/hangar" --ca "${HANGAR_REGISTRY_CA}" | tail -n1) ||
		die "this checkout's release did not build"
	[[ -f ${previous}/hangar.yaml ]] || die "the previous release ${name}: no ${previous}/hangar.yaml"
	[[ -f ${current}/hangar.yaml ]] || die "this checkout's release: no ${current}/hangar.yaml"
	cp -f "${current}/bin/virtctl" "${BIN_DIR}/virtctl"
	printf 'HANGAR_RELEASE_DIR=%s\nHANGAR_PREVIOUS_RELEASE_DIR=%s\n' "${current}" "${previous}" | tee "${STATE}/releases.env"
}

run_tests() {
	[[ -f ${STATE}/releases.env ]] || die "no releases built: hack/test-install.sh releases"
	local pattern
	pattern="^($(IFS='|'; echo "$*"))\$"
	set -a
	# shellcheck source=/dev/null
	source "${STATE}/releases.env"
	set +a
	local logfile="${STATE}/$(date +%s)-${1}.log" status=0
	KUBECONFIG="${ADMIN_KUBECONFIG}" PATH="${BIN_DIR}:${PATH}" \
		go test -count=1 -timeout 40m -tags e2e,install -run "${pattern}" -v ./test/e2e/ >"${logfile}" 2>&1 || status=$?
	# The tests' own lines and verdicts; the whole output stays in the log.
	grep -E '^\s*(=== RUN|--- |PASS|FAIL|ok|panic)|FIGURE|install_test.go' "${logfile}" || true
	((status == 0)) || log "[install-test] failed; the whole output is in ${logfile}"
	return "${status}"
}

main() {
	require_root
	kubectl_admin get --raw /readyz >/dev/null 2>&1 || die "the local cluster is not running: hack/cluster/up.sh"
	case ${1:-} in
	releases) releases ;;
	Test*) run_tests "$@" ;;
	*) die "usage: $0 releases | TEST..." ;;
	esac
}

main "$@"
