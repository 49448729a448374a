#!/usr/bin/env bash
# Runs Hangar's tests, as CI does: build, vet, generated-code drift, unit and integration
# tests (a real virt-api on a real embedded etcd; behind a real kube-apiserver through
# APIServices), the browser tests in Debian's Chromium, a short run of each fuzz target
# (hack/fuzz.sh), the node tests (virt-launcher and virt-handler with a real libvirtd and QEMU
# guests), then, on the local cluster (hack/cluster), the installer's tests and the end-to-end
# suite: releases pushed to the cluster's registry, the previous release installed and
# upgraded to this checkout with guests running, the end-to-end suite on it (guests boot,
# consoles answer), certificate rotation, removal, and the Helm chart (hack/test-install.sh).
# Prints each stage's duration. Node.js is never needed: node, npm and npx are shims that fail
# the run if anything calls them.
#
# Cold, the Kubernetes build dominates (~12-20 min on 2 cores); warm, the whole run takes a
# few minutes. The end-to-end stages need root. A cluster that was already running is left
# running; one this script started is torn down, whatever the outcome.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

stage() {
  local name=$1 status=0
  shift
  local start=${SECONDS}
  echo "=== [stage] ${name}"
  # Explicitly: a caller that tests a stage's outcome turns errexit off inside it.
  "$@" || status=$?
  if ((status != 0)); then
    echo "=== [stage] ${name} failed ($((SECONDS - start))s)"
    return "${status}"
  fi
  echo "=== [stage] ${name} done ($((SECONDS - start))s)"
}

cluster_running() {
  [[ -f _cluster/kubeconfig ]] &&
    _output/bin/kubectl --kubeconfig _cluster/kubeconfig get --raw /readyz >/dev/null 2>&1
}


# e2e_diagnostics keeps what a failed end-to-end run leaves only in the cluster, which is
# torn down next: the logs of Hangar's pods (the previous container's too, after a restart),
# every pod's and instance's state and the events, in _cluster/logs/e2e/ beside the control
# plane's own logs.
e2e_diagnostics() {
  local dir=_cluster/logs/e2e pod
  local kubectl=(_output/bin/kubectl --kubeconfig _cluster/kubeconfig)
  mkdir -p "${dir}"
  for pod in $("${kubectl[@]}" get pods -n hangar -o name); do
    "${kubectl[@]}" logs -n hangar "${pod}" --all-containers --timestamps >"${dir}/${pod#pod/}.log" 2>&1 || true
    "${kubectl[@]}" logs -n hangar "${pod}" --all-containers --timestamps --previous \
      >"${dir}/${pod#pod/}.previous.log" 2>/dev/null || rm -f "${dir}/${pod#pod/}.previous.log"
  done
  "${kubectl[@]}" get pods,vmis,vmims -A -o wide >"${dir}/objects.txt" 2>&1 || true
  "${kubectl[@]}" get vmis,vmims -A -o yaml >"${dir}/kubevirt.yaml" 2>&1 || true
  "${kubectl[@]}" get events -A --sort-by=.lastTimestamp >"${dir}/events.txt" 2>&1 || true
  "${kubectl[@]}" get hangar -o yaml >"${dir}/hangar.yaml" 2>&1 || true
  echo "e2e: the cluster's state and Hangar's logs are in ${dir}"
}

e2e() {
  local started_cluster=false
  if ! cluster_running; then
    started_cluster=true
    trap 'stage "cluster down" hack/cluster/down.sh' EXIT
  fi
  # Two nodes: what crosses nodes (spreading, failover, DNS and Services across nodes) is tested.
  stage "cluster up (${HANGAR_NODES} nodes)" hack/cluster/up.sh
  # The cluster this script brought up, whatever KUBECONFIG the caller has.
  stage "cluster smoke" env KUBECONFIG="${ROOT}/_cluster/kubeconfig" hack/cluster/smoke.sh
  # The test guests' images (test data, imported as such); Hangar comes only from releases.
  stage "e2e guest images" hack/guest/import-images.sh --all
  if [[ ${started_cluster} == false ]]; then
    # A cluster someone runs keeps its Hangar: this checkout is installed over it and the
    # end-to-end suite runs; the installer's tests need a cluster of their own (CI's).
    echo "The cluster was running: the installer tests (preflight, upgrade, rotation, removal, Helm) need one" \
      "without Hangar and are left out; run hack/cluster/down.sh first to include them."
    stage "install Hangar (release to the cluster's registry, manifest, Hangar object)" hack/install-local.sh
    stage "e2e" env KUBECONFIG="${ROOT}/_cluster/kubeconfig" go test -count=1 -timeout 60m -tags e2e ./test/e2e/... ||
      { e2e_diagnostics; return 1; }
    echo "The cluster was running before the tests; it is left running."
    return 0
  fi
  # The installer treats the cluster as a foreign one: releases pushed to its registry,
  # installed, upgraded and removed with their manifests and chart only. The upgrade leaves
  # this checkout installed for the end-to-end suite.
  stage "installer: releases (this checkout's, the previous one's from its commit)" hack/test-install.sh releases
  stage "installer: preflight refuses KubeVirt" hack/test-install.sh TestInstallerPreflightRefusesKubeVirt ||
    { e2e_diagnostics; return 1; }
  stage "installer: upgrade from the previous release" hack/test-install.sh TestInstallerUpgrade ||
    { e2e_diagnostics; return 1; }
  stage "e2e" env KUBECONFIG="${ROOT}/_cluster/kubeconfig" go test -count=1 -timeout 60m -tags e2e ./test/e2e/... ||
    { e2e_diagnostics; return 1; }
  stage "installer: certificate rotation" hack/test-install.sh TestInstallerCertificateRotation ||
    { e2e_diagnostics; return 1; }
  stage "installer: removal" hack/test-install.sh TestInstallerRemoval || { e2e_diagnostics; return 1; }
  stage "installer: Helm chart" hack/test-install.sh TestInstallerHelm || { e2e_diagnostics; return 1; }
}

# HANGAR_HOST_LOCK names a file to hold a lock on (flock) from the node tests to the end: on
# a machine where several checkouts run tests, the stages that use the host as root (libvirtd,
# network namespaces, the cluster) take turns; the builds and unit tests before them do not
# wait.
lock_host() {
  [[ -n ${HANGAR_HOST_LOCK:-} ]] || return 0
  exec 9>"${HANGAR_HOST_LOCK}"
  flock 9
}

# forbid_node puts node, nodejs, npm and npx on the PATH as shims that record who called them
# and fail: Hangar's build, tests and local-up need no Node.js (hack/local-up.sh runs
# hack/cluster/up.sh and hack/install-local.sh, which the end-to-end stages run too), and the
# last stage fails if anything called one, whatever the machine has installed.
readonly NO_NODE_DIR=${ROOT}/_output/no-node
forbid_node() {
  local tool
  rm -rf "${NO_NODE_DIR}"
  mkdir -p "${NO_NODE_DIR}/bin"
  for tool in node nodejs npm npx; do
    {
      echo '#!/bin/sh'
      echo 'echo "$(basename "$0") $*: Hangar'"'"'s build and tests use no Node.js (hack/test.sh)" >&2'
      echo 'echo "$(basename "$0") $* (called by: $(tr "\0" " " </proc/$PPID/cmdline 2>/dev/null))" >>"'"${NO_NODE_DIR}"'/calls"'
      echo 'exit 127'
    } >"${NO_NODE_DIR}/bin/${tool}"
    chmod +x "${NO_NODE_DIR}/bin/${tool}"
  done
  export PATH="${NO_NODE_DIR}/bin:${PATH}"
}

no_node_called() {
  if [[ -s ${NO_NODE_DIR}/calls ]]; then
    echo "Node.js was called during the run:" >&2
    cat "${NO_NODE_DIR}/calls" >&2
    return 1
  fi
  echo "node, nodejs, npm and npx: never called"
}

START=${SECONDS}
export HANGAR_NODES=${HANGAR_NODES:-2}
# The end-to-end suite snapshots, restores and clones VMs through Kubernetes' own snapshot
# machinery: the cluster's snapshot add-on (its CSI driver and sidecars) is built and brought up.
export HANGAR_CLUSTER_SNAPSHOTS=1
forbid_node
# The browser tests drive Debian's Chromium (test/browser) and the rules' tests run Debian's
# promtool, both installed below: a missing one fails them instead of skipping them.
export HANGAR_REQUIRE_BROWSER=1 HANGAR_REQUIRE_PROMTOOL=1
# libvirt.org/go/libvirt is cgo: the node packages need libvirt-dev (and the node tests QEMU).
stage "node packages" hack/install-node-deps.sh
stage "browser (Debian's Chromium, for the browser tests)" hack/install-browser.sh
stage "prometheus (Debian's: promtool for the rules' tests, the server for the monitoring tests)" hack/install-prometheus.sh
stage "go build" go build ./...
# Every build tag at once: benchmarks and tests that CI does not run still compile.
stage "go vet" go vet -tags kube,e2e,bench,libvirt,cluster,install ./...
stage "verify gofmt" hack/verify-gofmt.sh
stage "verify codegen" hack/verify-codegen.sh
stage "kubernetes binaries (and the snapshot add-on's)" hack/cluster/build.sh
stage "cluster tooling tests" go -C hack/tools test -count=1 ./...
# csi-test's sanity suite against the local cluster's CSI driver: a module of its own (its
# dependencies must not reach the tools module's Kubernetes build).
stage "CSI sanity (hack/tools/csisanity)" go -C hack/tools/csisanity test -count=1 ./...
stage "unit and integration tests" go test -count=1 -tags kube -skip '^TestGeneratedClients$' ./...
# Clients generated with oapi-codegen (test/openapiclient, a module of its own, from the module
# proxy when the cache is empty) from virt-api's OpenAPI drive virt-api: a stage of its own, so
# its time shows.
stage "generated OpenAPI clients (test/openapiclient)" go test -count=1 -run '^TestGeneratedClients$' ./test/integration/
stage "fuzz validation and DHCP (15s per target)" hack/fuzz.sh
stage "host lock ${HANGAR_HOST_LOCK:-(none)}" lock_host
stage "node tests (libvirtd, QEMU)" hack/test-node.sh
e2e
stage "no Node.js on the build, test and local-up path" no_node_called
echo "=== all stages passed ($((SECONDS - START))s)"
