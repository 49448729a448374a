#!/usr/bin/env bash
# Fails when the generated code differs from what hack/update-codegen.sh produces now: it
# regenerates into a scratch copy of the tree and compares, leaving this checkout untouched.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

# Only what generation reads and writes: sources, go.mod/go.sum, hack/, the generated CRDs.
tar -C "${ROOT}" -cf - go.mod go.sum hack pkg artifacts/install/crd | tar -C "${SCRATCH}" -xf -
"${SCRATCH}/hack/update-codegen.sh" >/dev/null

status=0
for path in pkg hack/api-rules-violations.list artifacts/install/crd; do
  if ! diff -Nru "${ROOT}/${path}" "${SCRATCH}/${path}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "Generated code is out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "Generated code is up to date."
