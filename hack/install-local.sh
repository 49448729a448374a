#!/usr/bin/env bash
# Installs this checkout on the local cluster (hack/cluster/up.sh) the way Hangar installs on
# any cluster: its release (hack/release.sh) pushed to the cluster's registry, whence the nodes
# pull it, the release manifest applied, the local cluster's Hangar object
# (hack/cluster/hangar.yaml) applied, and a wait until it is Available. No certificate, Secret
# or image is made by hand: hangar-operator does the rest. An installed earlier build is
# upgraded in place. Also imports the test guests' images (hack/guest/import-images.sh), which
# are test data, not Hangar.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"

RELEASE_DIR=""
release() {
	eval "$("${CLUSTER_TOOL}" registry)"
	RELEASE_DIR=$("${REPO_ROOT}/hack/release.sh" --registry "${HANGAR_REGISTRY}/hangar" --ca "${HANGAR_REGISTRY_CA}" | tail -n1)
	mkdir -p "${BIN_DIR}"
	cp -f "${RELEASE_DIR}/bin/virtctl" "${BIN_DIR}/virtctl"
}

apply_release() {
	kubectl_admin apply --server-side --force-conflicts -f "${RELEASE_DIR}/hangar.yaml" >/dev/null
	kubectl_admin wait --for=condition=Established --timeout=60s crd/hangars.hangarvm.io >/dev/null
	kubectl_admin apply --server-side --force-conflicts -f "${REPO_ROOT}/hack/cluster/hangar.yaml" >/dev/null
}

# wait_available waits for the Hangar object to be Available at this release's version; when
# it is not, prints its status, the operator's log and the component pods.
wait_available() {
	local version
	version=$(basename "${RELEASE_DIR}")
	if kubectl_admin wait hangar/hangar --for=jsonpath='{.status.observedVersion}'="${version}" --timeout=900s >/dev/null &&
		kubectl_admin wait hangar/hangar --for=condition=Available --timeout=300s >/dev/null; then
		return 0
	fi
	log ""
	log "--- the Hangar object"
	kubectl_admin get hangar hangar -o yaml >&2 || true
	log "--- pods in hangar"
	kubectl_admin -n hangar get pods -o wide >&2 || true
	log "--- hangar-operator's log"
	kubectl_admin -n hangar logs deployment/hangar-operator --tail=40 >&2 || true
	log "--- newest events in hangar"
	kubectl_admin -n hangar get events --sort-by=.lastTimestamp 2>&1 | tail -n 30 >&2 || true
	return 1
}

main() {
	require_root
	local start=${SECONDS}
	kubectl_admin get --raw /readyz >/dev/null 2>&1 || die "the local cluster is not running: hack/cluster/up.sh"
	run_step install "guest images" "${REPO_ROOT}/hack/guest/import-images.sh"
	run_step install "release" release
	run_step install "apply" apply_release
	run_step install "available" wait_available
	log "[install] Hangar $(basename "${RELEASE_DIR}") is installed ($((SECONDS - start))s): kubectl --kubeconfig ${ADMIN_KUBECONFIG} get hangar"
}

main "$@"
