#!/usr/bin/env bash
# Prints boot figures in one run: bare QEMU booting the test guest (hack/guest/boot-bench.sh),
# then VMIs on the local cluster from creation to the banner on their serial console (median,
# p95 and the ratio to bare QEMU; each stage of the start path, from watch events, the start
# times of the launcher pod's processes and the launcher's log), then BENCH_BURST VMIs created
# at once: the time until all printed the banner, each stage's median and p95 over the burst,
# the host memory per guest and the host's CPU time meanwhile by component (guests, Hangar,
# Kubernetes and runtime), against as many bare QEMUs started at once. The bursts run
# BENCH_BURST_RUNS times (3), alternating with bare QEMU's: on a shared machine one burst's time
# moves by ±10 % from run to run, for bare QEMU as for Hangar, so the figure is the median of
# the pairs' ratios. Needs the cluster and Hangar deployed (hack/local-up.sh). A benchmark,
# not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
export KUBECONFIG=${KUBECONFIG:-${ROOT}/_cluster/kubeconfig}
runs=${BENCH_BOOTS:-10}
burst=${BENCH_BURST:-20}
burst_runs=${BENCH_BURST_RUNS:-3}

# Bare QEMU gets what a VMI's guest has that changes its work: q35, the console on a socket,
# a virtio-scsi controller (every domain has one, for hotplugged disks) and a virtio NIC (user-mode networking; the guest asks for an address by DHCP after its
# banner, as in a VMI).
bare=$(CONSOLE=socket MACHINE=q35 NIC=virtio SCSI=virtio hack/guest/boot-bench.sh "${runs}" 2>/dev/null | grep 'boot-to-banner' | tail -1)
echo "${bare}"
# The test's whole output stays in _output/bench/boot.log.
mkdir -p _output/bench
BENCH_BOOTS=${runs} BENCH_BURST=${burst} go test -count=1 -v -tags e2e,bench -timeout 60m -run TestBootFigures ./test/e2e/ \
  >_output/bench/boot.log 2>&1 || { tail -40 _output/bench/boot.log >&2; exit 1; }
hangar=$(grep -E '^(Hangar|  [A-Za-z]|[0-9]+ VMIs|host memory)' _output/bench/boot.log)
echo "${hangar}"
bare_median=$(sed -E 's/.*median=([0-9.]+)s.*/\1/' <<<"${bare}")
hangar_median=$(grep '^Hangar VMI' <<<"${hangar}" | sed -E 's/.*median=([0-9.]+)s.*/\1/')
awk -v h="${hangar_median}" -v b="${bare_median}" 'BEGIN { printf "ratio Hangar/bare QEMU (median): %.2f\n", h / b }'

# Bursts: Hangar's (the first one in the run above), then as many bare QEMUs at once, once
# the cluster's guests are gone; then more pairs, Hangar's alone.
bare_burst() {
  # The benchmark's guests, not the demo VM's.
  for _ in $(seq 120); do
    pgrep -f 'guest=bench-boot_' >/dev/null || break
    sleep 1
  done
  BURST=${burst} CONSOLE=socket MACHINE=q35 NIC=virtio SCSI=virtio hack/guest/boot-bench.sh 2>/dev/null | grep ' burst: '
}
after() { sed -E 's/.*after ([0-9.]+)s.*/\1/'; }
hangar_all=("$(grep "VMIs created at once" <<<"${hangar}" | after)")
line=$(bare_burst)
echo "${line}"
bare_all=("$(after <<<"${line}")")
for run in $(seq 2 "${burst_runs}"); do
  BENCH_BOOTS=0 BENCH_BURST=${burst} go test -count=1 -v -tags e2e,bench -timeout 60m -run TestBootFigures ./test/e2e/ \
    >_output/bench/boot-burst-${run}.log 2>&1 || { tail -40 _output/bench/boot-burst-${run}.log >&2; exit 1; }
  hangar_all+=("$(grep "VMIs created at once" "_output/bench/boot-burst-${run}.log" | after)")
  bare_all+=("$(bare_burst | after)")
done
echo "  (bare QEMUs without a NIC, once: $(BURST=${burst} CONSOLE=socket MACHINE=q35 hack/guest/boot-bench.sh 2>/dev/null | grep ' burst: ' | sed 's/.*bannered //'))"
pairs=""
ratios=()
for i in "${!hangar_all[@]}"; do
  ratio=$(awk -v h="${hangar_all[$i]}" -v b="${bare_all[$i]}" 'BEGIN { printf "%.2f", h / b }')
  pairs+=" ${hangar_all[$i]}s/${bare_all[$i]}s=${ratio}"
  ratios+=("${ratio}")
done
echo "burst of ${burst}, Hangar/bare QEMU per pair:${pairs}"
mapfile -t ratios < <(printf '%s\n' "${ratios[@]}" | sort -n)
echo "ratio Hangar/bare QEMU (burst of ${burst}, median of ${#ratios[@]} pairs): ${ratios[$(((${#ratios[@]} - 1) / 2))]}"
