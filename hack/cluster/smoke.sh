#!/usr/bin/env bash
# Smoke check of a running local cluster (hack/cluster/up.sh), as test/cluster runs it: every
# node runs a DaemonSet's pod; pods reach each other across nodes and a Service by name
# (cluster DNS); the host reaches the Service's ClusterIP; a drain moves a Deployment's pods to
# the other nodes (two nodes or more); a Filesystem (local-path) and a Block (hangar-block)
# claim are provisioned and used. Then the registry, as hack/tools/smoke checks it: images
# pushed with hack/cluster/push.sh are pulled and run on every node. Prints the time each part
# took; cleans up after itself. Run it as root (the registry check forgets the nodes' pulled
# images with ctr).
#
# Usage: hack/cluster/smoke.sh [go test flags], e.g. -run TestDrain -v
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"
export KUBECONFIG="${KUBECONFIG:-${ADMIN_KUBECONFIG}}"
go test -count=1 -tags cluster -v "$@" ./test/cluster/...
# The registry's check lives with the tooling it checks, in the tools module.
go -C "${TOOLS_DIR}" test -count=1 -tags cluster -v "$@" ./smoke/...
