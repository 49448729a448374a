#!/usr/bin/env bash
# debian-kernel.sh: unpacks the kernel of Debian's linux-image-amd64 for the test guests and
# prints its release (e.g. 6.1.0-56-amd64).
#
# Output (under _output/guest/, git-ignored):
#   debian-kernel/boot/vmlinuz-RELEASE   the signed, XZ-compressed bzImage
#   debian-kernel/lib/modules/RELEASE/   its modules, indexed by depmod, so that
#                                        `modinfo -b DIR -k RELEASE` resolves them
#   debian-kernel/.package               the package and version unpacked
#
# The package is fetched with apt-get download and unpacked, never installed: installing
# a kernel would change the build host's /boot (and its boot loader's menu) and spend
# minutes generating an initramfs nobody uses. Unpacked once; FETCH_KERNEL=1 fetches the
# version apt offers now.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
KERNEL_DIR=$OUTPUT_DIR/debian-kernel
PACKAGE_FILE=$KERNEL_DIR/.package

log() { echo "debian-kernel: $*" >&2; }

# release_of PACKAGE_FILE_CONTENT: "linux-image-6.1.0-56-amd64 6.1.192-2" -> 6.1.0-56-amd64.
release_of() { sed -n 's/^linux-image-\([^ ]*\) .*/\1/p' <<<"$1"; }

unpacked() {
  [[ -s "$PACKAGE_FILE" ]] || return 1
  local release
  release=$(release_of "$(cat "$PACKAGE_FILE")")
  [[ -n "$release" && -s "$KERNEL_DIR/boot/vmlinuz-$release" \
    && -s "$KERNEL_DIR/lib/modules/$release/modules.dep" ]]
}

# download PACKAGE...: into the current directory. As root, apt-get would hand the download
# to its _apt user, who may not write here.
download() { apt-get download -qq -o APT::Sandbox::User=root "$@"; }

# DEBS holds the downloads while fetch runs; removed on exit.
DEBS=""
trap '[[ -z "$DEBS" ]] || rm -rf "$DEBS"' EXIT

fetch() {
  local meta package version
  DEBS=$(mktemp -d "$OUTPUT_DIR/debian-kernel-debs.XXXXXX")
  # The metapackage names the kernel of the day in its dependencies.
  if ! (cd "$DEBS" && download linux-image-amd64) 2>/dev/null; then
    log "apt knows no linux-image-amd64 yet: apt-get update"
    apt-get update -qq
    (cd "$DEBS" && download linux-image-amd64)
  fi
  meta=$(ls "$DEBS"/linux-image-amd64_*.deb)
  package=$(dpkg-deb -f "$meta" Depends | tr ',|' '\n\n' | sed -n 's/^ *\(linux-image-[^ ]*\).*/\1/p' | head -n1)
  [[ -n "$package" ]] || { log "linux-image-amd64 depends on no linux-image-*"; exit 1; }
  log "fetching $package"
  (cd "$DEBS" && download "$package")
  version=$(dpkg-deb -f "$DEBS/${package}"_*.deb Version)

  rm -rf "$KERNEL_DIR"
  mkdir -p "$KERNEL_DIR"
  dpkg-deb -x "$DEBS/${package}"_*.deb "$KERNEL_DIR"
  depmod -b "$KERNEL_DIR" "${package#linux-image-}"
  echo "$package $version" > "$PACKAGE_FILE"
}

main() {
  mkdir -p "$OUTPUT_DIR"
  if [[ "${FETCH_KERNEL:-0}" != 0 ]] || ! unpacked; then
    command -v depmod >/dev/null || { log "depmod missing (package kmod)"; exit 1; }
    fetch
  fi
  release_of "$(cat "$PACKAGE_FILE")"
}

main "$@"
