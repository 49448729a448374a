#!/usr/bin/env bash
# The first command: a real single-node Kubernetes on this machine (hack/cluster/up.sh) with
# Hangar deployed on it (hack/deploy.sh), and kubectl/virtctl ready to use. Idempotent; run as
# root on Debian 12. Tear down with hack/cluster/down.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
start=${SECONDS}
hack/cluster/up.sh
hack/deploy.sh
go build -o _output/bin/virtctl ./cmd/virtctl
cat <<MSG

Hangar is up ($((SECONDS - start))s). Use it with:

  export KUBECONFIG=${ROOT}/_cluster/kubeconfig PATH=${ROOT}/_output/bin:\$PATH
  kubectl get vms -A
  virtctl version

Stop everything and restore the host with: hack/cluster/down.sh
MSG
