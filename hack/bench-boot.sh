#!/usr/bin/env bash
# Prints boot figures in one run: bare QEMU booting the test guest (hack/guest/boot-bench.sh),
# then VMIs on the local cluster from creation to the banner on their serial console (median,
# p95 and the ratio to bare QEMU; each stage of the start path, from watch events and the
# launcher's log), then BENCH_BURST VMIs created at once: the time until all printed the banner,
# each stage's median and p95 over the burst, and the host memory per guest, against as many
# bare QEMUs started at once. Needs the cluster and Hangar deployed (hack/local-up.sh). A
# benchmark, not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig}
runs=${BENCH_BOOTS:-10}
burst=${BENCH_BURST:-20}

# Bare QEMU gets what a VMI's guest has that changes its work: q35, the console on a socket
# and a virtio NIC (user-mode networking; the guest asks for an address by DHCP after its
# banner, as in a VMI).
bare=$(CONSOLE=socket MACHINE=q35 NIC=virtio hack/guest/boot-bench.sh "${runs}" 2>/dev/null | grep 'boot-to-banner' | tail -1)
echo "${bare}"
# The test's whole output stays in _output/bench/boot.log.
mkdir -p _output/bench
BENCH_BOOTS=${runs} BENCH_BURST=${burst} go test -count=1 -v -tags e2e,bench -timeout 60m -run TestBootFigures ./test/e2e/ \
  >_output/bench/boot.log 2>&1 || { tail -40 _output/bench/boot.log >&2; exit 1; }
hangar=$(grep -E '^(Hangar|  [a-z]|[0-9]+ VMIs|host memory)' _output/bench/boot.log)
echo "${hangar}"
bare_median=$(sed -E 's/.*median=([0-9.]+)s.*/\1/' <<<"${bare}")
hangar_median=$(grep '^Hangar VMI' <<<"${hangar}" | sed -E 's/.*median=([0-9.]+)s.*/\1/')
awk -v h="${hangar_median}" -v b="${bare_median}" 'BEGIN { printf "ratio Hangar/bare QEMU (median): %.2f\n", h / b }'

# The same number of bare QEMUs at once, once the cluster's guests are gone.
for _ in $(seq 120); do
  pgrep -f qemu-system >/dev/null || break
  sleep 1
done
bare_burst=$(BURST=${burst} CONSOLE=socket MACHINE=q35 NIC=virtio hack/guest/boot-bench.sh 2>/dev/null | grep ' burst: ')
echo "${bare_burst}"
echo "  (the same without a NIC: $(BURST=${burst} CONSOLE=socket MACHINE=q35 hack/guest/boot-bench.sh 2>/dev/null | grep ' burst: ' | sed 's/.*bannered //'))"
hangar_all=$(grep 'VMIs created at once' <<<"${hangar}" | sed -E 's/.*after ([0-9.]+)s.*/\1/')
bare_all=$(sed -E 's/.*after ([0-9.]+)s.*/\1/' <<<"${bare_burst}")
awk -v h="${hangar_all}" -v b="${bare_all}" -v n="${burst}" 'BEGIN { printf "ratio Hangar/bare QEMU (burst of %d): %.2f\n", n, h / b }'
