#!/usr/bin/env bash
# build-node-images.sh [TAG | --rootfs]: the virt-launcher and virt-handler images, from Debian
# packages only, both on one root file system:
#   1. debootstrap bookworm minbase + libvirt's QEMU driver, QEMU, qemu-utils (containerDisk
#      overlays), ovmf and swtpm (EFI guests, Secure Boot, the TPM) and nftables (the nft that
#      knftables runs for the handler's rules; links, addresses and routes go over netlink, no
#      iproute2), from the mirror apt uses (hack/guest/apt-mirror.sh; MIRROR= overrides);
#      cached per package list and mirror under _output/launcher-image/;
#   2. the launcher's unprivileged user qemu (uid and gid 107, as KubeVirt's), which runs
#      libvirtd in session mode and QEMU; docs, man pages, locales, apt's lists and every
#      libvirt connection driver but QEMU's removed;
#   3. virt-launcher (cgo, linked against the same Debian's libvirt), virt-handler, the
#      static hangar-copy (the launcher pod's init containers run it inside kernelBoot and
#      containerDisk images) and the static virt-exportserver (a VirtualMachineExport's pod
#      runs it from this image);
#   4. hangar.local/virt-launcher:TAG and hangar.local/virt-handler:TAG (TAG: dev) written
#      by the cluster's imagebuild and, when the local cluster runs, imported into every
#      node's containerd (hack/cluster/image.sh).
# With --rootfs it stops after step 3 and prints the root file system's directory: a release
# (hack/release.sh) makes its images from it, with the binaries it built into NODE_BIN_DIR
# (stamped with the version) instead of step 3's own.
# Prints each step with its seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=${1:-dev}
ROOTFS_ONLY=false
[[ ${TAG} == --rootfs ]] && ROOTFS_ONLY=true
# Where virt-launcher, virt-handler, hangar-copy and virt-exportserver come from; built here
# when unset.
NODE_BIN_DIR=${NODE_BIN_DIR:-}
WORK_DIR=$ROOT/_output/launcher-image
SUITE=bookworm
INCLUDE=libvirt-daemon,libvirt-daemon-driver-qemu,qemu-system-x86,qemu-utils,ovmf,swtpm,swtpm-tools,nftables
MIRROR=${MIRROR:-$("$ROOT/hack/guest/apt-mirror.sh" "$SUITE")}
TARGET=""

log() { echo "build-node-images: $*" >&2; }

step() {
  local name=$1 start
  shift
  start=$(date +%s.%N)
  "$@"
  log "$name: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
}

# cleanup: debootstrap mounts proc and sys in its target; never leave them behind.
cleanup() {
  [[ -n "$TARGET" ]] || return 0
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v t="$TARGET" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r)
}
trap cleanup EXIT

install_deps() {
  "$ROOT/hack/install-node-deps.sh"
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  fi
}

build_binaries() {
  [[ -z $NODE_BIN_DIR ]] || return 0
  mkdir -p "$ROOT/_output/bin"
  (cd "$ROOT" && go build -o _output/bin/virt-launcher ./cmd/virt-launcher && go build -o _output/bin/virt-handler ./cmd/virt-handler &&
    CGO_ENABLED=0 go build -o _output/bin/hangar-copy ./cmd/hangar-copy &&
    CGO_ENABLED=0 go build -o _output/bin/virt-exportserver ./cmd/virt-exportserver)
}

bootstrap() {
  local key
  key=$(echo "$SUITE $INCLUDE $MIRROR" | sha256sum | cut -c1-16)
  BOOTSTRAP=$WORK_DIR/bootstrap-$key
  if [[ -f $BOOTSTRAP.done ]]; then
    log "debootstrap cached in $BOOTSTRAP"
    return 0
  fi
  rm -rf "$BOOTSTRAP"
  mkdir -p "$BOOTSTRAP"
  TARGET=$BOOTSTRAP
  if ! debootstrap --variant=minbase --include="$INCLUDE" --components=main \
      "$SUITE" "$BOOTSTRAP" "$MIRROR" > "$WORK_DIR/debootstrap.log" 2>&1; then
    tail -n 20 "$WORK_DIR/debootstrap.log" >&2
    log "debootstrap failed; log in $WORK_DIR/debootstrap.log"
    return 1
  fi
  cleanup
  TARGET=""
  touch "$BOOTSTRAP.done"
}

configure_rootfs() {
  ROOTFS=$WORK_DIR/rootfs
  rm -rf "$ROOTFS"
  cp -a "$BOOTSTRAP" "$ROOTFS"
  # The launcher runs as KubeVirt's qemu user (107): libvirtd in session mode and QEMU resolve
  # their user's name and home. The home is in the launcher pod's private volume.
  if ! grep -q '^qemu:x:107:107:' "$ROOTFS/etc/passwd"; then
    if awk -F: '$3 == 107 || $4 == 107' "$ROOTFS/etc/passwd" | grep -q . || awk -F: '$3 == 107' "$ROOTFS/etc/group" | grep -q .; then
      log "uid or gid 107 is taken in the root file system; the launcher's user cannot be created"
      return 1
    fi
    chroot "$ROOTFS" groupadd --system --gid 107 qemu
    chroot "$ROOTFS" useradd --system --uid 107 --gid 107 --no-create-home \
      --home-dir /var/run/hangar/private/libvirt/home --shell /usr/sbin/nologin qemu
  fi
  rm -rf "$ROOTFS"/usr/share/{doc,man,info,locale} "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/log/*
  # libvirtd loads every connection driver it finds, and a launcher's serves one QEMU: the
  # others are attack surface, and nodedev alone costs each launcher ~60 ms of CPU walking
  # the host's devices.
  find "$ROOTFS/usr/lib/x86_64-linux-gnu/libvirt/connection-driver" -name 'libvirt_driver_*.so' \
    ! -name libvirt_driver_qemu.so -delete
  # A container gets /etc/resolv.conf and /etc/hosts from the runtime.
  rm -f "$ROOTFS/etc/resolv.conf" "$ROOTFS/etc/hostname"
  local bin=${NODE_BIN_DIR:-$ROOT/_output/bin}
  install -m 0755 "$bin/virt-launcher" "$ROOTFS/usr/bin/virt-launcher"
  install -m 0755 "$bin/virt-handler" "$ROOTFS/usr/bin/virt-handler"
  install -m 0755 "$bin/hangar-copy" "$ROOTFS/usr/bin/hangar-copy"
  install -m 0755 "$bin/virt-exportserver" "$ROOTFS/usr/bin/virt-exportserver"
  log "root file system: $(du -sh "$ROOTFS" | cut -f1)"
}

# image NAME ENTRYPOINT: one image of the root file system.
image() {
  local ref=hangar.local/$1:$TAG entrypoint=$2
  if [[ -x $ROOT/_output/bin/imagebuild && -x $ROOT/_output/bin/hangar-cluster && -f $ROOT/_cluster/kubeconfig ]] &&
    "$ROOT/_output/bin/kubectl" --kubeconfig "$ROOT/_cluster/kubeconfig" get --raw /readyz >/dev/null 2>&1; then
    "$ROOT/hack/cluster/image.sh" "$ref" -dir "$ROOTFS" -entrypoint "$entrypoint"
    log "$ref imported into the cluster's containerd"
  elif [[ -x $ROOT/_output/bin/imagebuild ]]; then
    "$ROOT/_output/bin/imagebuild" -image "$ref" -out "$WORK_DIR/$1.tar" -dir "$ROOTFS" -entrypoint "$entrypoint" >/dev/null
    log "$ref written to $WORK_DIR/$1.tar (no cluster running to import it into)"
  else
    log "no _output/bin/imagebuild (hack/cluster/build.sh); root file system left in $ROOTFS"
  fi
}

main() {
  [[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot)"; exit 1; }
  mkdir -p "$WORK_DIR"
  step "packages" install_deps
  step "binaries" build_binaries
  step "debootstrap" bootstrap
  step "root file system" configure_rootfs
  if [[ $ROOTFS_ONLY == true ]]; then
    echo "$ROOTFS"
    return 0
  fi
  step "launcher image" image virt-launcher /usr/bin/virt-launcher
  step "handler image" image virt-handler /usr/bin/virt-handler
}

main "$@"
