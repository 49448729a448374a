#!/usr/bin/env bash
# Runs each fuzz target briefly, as CI does: validation and defaulting must never panic or
# hang, and whatever they accept must build a launcher pod the pod API accepts (see
# pkg/apis/kubevirt/validation/fuzz_test.go); the launcher's DHCP server answers whatever a
# guest sends only for the guest's MAC and with its lease (FuzzDHCP in
# pkg/podnetwork/dhcp); virt-api's body guard lets through only what decodes quickly, in every
# reading the server gives a body (FuzzGuard in pkg/apiserver/bodyguard); whatever a launcher
# answers, virt-handler decodes it within the shape bounds (FuzzDecodeAnswer in
# pkg/launcher/api). `go test -fuzz` takes one target at a time.
# A failing input is written to the package's testdata/fuzz/<target>/: fix the bug and
# commit the input, which every `go test` then runs as a regression.
#
#   FUZZTIME=10m hack/fuzz.sh     # a longer local run (default 15s per target)
#
# The first run builds every dependency with coverage instrumentation (a few minutes on
# 2 cores); the Go build cache keeps it for the next.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

FUZZTIME=${FUZZTIME:-15s}
TARGETS=(
  ./pkg/apis/kubevirt/validation/:FuzzVirtualMachineInstance
  ./pkg/apis/kubevirt/validation/:FuzzTemplates
  ./pkg/apis/kubevirt/validation/:FuzzBounds
  ./pkg/podnetwork/dhcp/:FuzzDHCP
  ./pkg/apiserver/bodyguard/:FuzzGuard
  ./pkg/launcher/api/:FuzzDecodeAnswer
)
for t in "${TARGETS[@]}"; do
  pkg=${t%%:*} target=${t#*:}
  echo "--- ${target} (${FUZZTIME})"
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}" -parallel 2 "${pkg}"
done
