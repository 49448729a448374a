#!/usr/bin/env bash
# The first command: a real single-node Kubernetes on this machine (hack/cluster/up.sh) with
# Hangar installed on it as on any cluster (hack/install-local.sh: its release pushed to the
# cluster's registry, the release manifest, a Hangar object), and kubectl/virtctl ready to use.
# Idempotent; run as root on Debian 12. Tear down with hack/cluster/down.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
start=${SECONDS}
hack/cluster/up.sh
hack/install-local.sh

# The demo VM: a small guest booted from a kernel (TCG here; KVM on real hosts).
kubectl="_output/bin/kubectl --kubeconfig _cluster/kubeconfig"
${kubectl} apply -f artifacts/examples/demo-vm.yaml >/dev/null
echo "[demo] waiting for the demo VM to run ..." >&2
${kubectl} wait vm/demo --for=jsonpath='{.status.printableStatus}'=Running --timeout=180s >/dev/null
cat <<MSG

Hangar is up ($((SECONDS - start))s), with the demo VM running. Use it with:

  export KUBECONFIG=${ROOT}/_cluster/kubeconfig PATH=${ROOT}/_output/bin:\$PATH
  kubectl get vms
  virtctl console demo        # a root shell on the guest's serial console; Ctrl+] leaves

Stop everything and restore the host with: hack/cluster/down.sh
MSG
