#!/usr/bin/env bash
# Builds virt-api and runs it standalone: no Kubernetes needed, an embedded etcd keeps the
# objects in _standalone/ across restarts, and kubectl talks to it through the kubeconfig
# it writes. Authentication and authorization are off: it listens on 127.0.0.1 only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
STATE=${HANGAR_STANDALONE_DIR:-${ROOT}/_standalone}
PORT=${HANGAR_STANDALONE_PORT:-18443}

echo "Building virt-api ..."
go build -o _output/bin/virt-api ./cmd/virt-api

cat <<MSG
Starting virt-api on https://127.0.0.1:${PORT} (state in ${STATE}). In another shell:

  export KUBECONFIG=${STATE}/kubeconfig
  kubectl apply -f test/integration/testdata/vm-cirros.yaml
  kubectl get vms

Stop with Ctrl-C.
MSG
exec _output/bin/virt-api \
  --standalone --insecure-disable-delegated-auth \
  --embedded-etcd-dir "${STATE}/etcd" \
  --cert-dir "${STATE}/certs" \
  --write-kubeconfig "${STATE}/kubeconfig" \
  --secure-port "${PORT}"
