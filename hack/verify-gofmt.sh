#!/usr/bin/env bash
# verify-gofmt.sh: fails, naming them, if any of the repository's Go files (the nested
# modules' included) is not as gofmt writes it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unformatted=$(git ls-files -z -- '*.go' | xargs -0 gofmt -l)
if [[ -n "${unformatted}" ]]; then
  echo "verify-gofmt: not as gofmt writes them (gofmt -w them):" >&2
  echo "${unformatted}" >&2
  exit 1
fi
echo "Go files are gofmt'ed."
