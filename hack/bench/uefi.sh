#!/usr/bin/env bash
# Prints the issue's figure for UEFI guests: hack/guest's UEFI image with Secure Boot (OVMF
# with SMM, shim, GRUB, the signed kernel) from power-on to its console banner, booted by
# virt-launcher (libvirt, the instance's domain) and by bare QEMU with the same OVMF, image
# and memory, one after the other in one run (test/node's TestUEFIBootFigures), BENCH_RUNS
# times (default 1). Needs root as the node tests do; run it under the host lock. A
# benchmark, not a test: under TCG on a shared machine the figures move with the load.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
[[ $(id -u) == 0 ]] || { echo "bench/uefi.sh: needs root (as the node tests)" >&2; exit 1; }
hack/install-node-deps.sh
hack/guest/build-uefi.sh >/dev/null
go test -v -tags libvirt -count="${BENCH_RUNS:-1}" -timeout 30m \
  -run '^TestUEFIBootFigures$' ./test/node/ | sed -n 's/^.*\(UEFI Secure Boot to banner: .*\)$/\1/p'
