#!/usr/bin/env bash
# Smoke check of a running local cluster (hack/cluster/up.sh), as test/cluster runs it: every
# node runs a DaemonSet's pod; pods reach each other across nodes and a Service by name
# (cluster DNS); the host reaches the Service's ClusterIP; a drain moves a Deployment's pods to
# the other nodes (two nodes or more); a Filesystem (local-path) and a Block (hangar-block)
# claim are provisioned and used. Prints the time each part took; cleans up after itself.
#
# Usage: hack/cluster/smoke.sh [go test flags], e.g. -run TestDrain -v
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"
KUBECONFIG="${KUBECONFIG:-${ADMIN_KUBECONFIG}}" exec go test -count=1 -tags cluster -v "$@" ./test/cluster/...
