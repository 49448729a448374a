#!/usr/bin/env bash
# build-launcher-image.sh [IMAGE]: the virt-launcher image, from Debian packages only:
#   1. a root file system: debootstrap bookworm minbase + libvirt's QEMU driver, QEMU,
#      qemu-utils (containerDisk overlays) and iproute2 (the DHCP server reads the pod's
#      route), from the mirror apt uses (hack/guest/apt-mirror.sh; MIRROR= overrides);
#      cached per package list and mirror under _output/launcher-image/;
#   2. the libvirt-qemu user and group libvirtd 9.0 looks up even when it runs QEMU as root (from
#      libvirt-daemon-system, which would drag in systemd: created by hand instead);
#      docs, man pages, locales and apt's lists removed;
#   3. virt-launcher (cgo, linked against the same Debian's libvirt) as the entrypoint;
#   4. the image written by the cluster's imagebuild and, when the local cluster runs,
#      imported into its containerd (hack/cluster/image.sh).
# Default IMAGE: hangar.local/virt-launcher:dev. Prints each step with its seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE=${1:-hangar.local/virt-launcher:dev}
WORK_DIR=$ROOT/_output/launcher-image
SUITE=bookworm
INCLUDE=libvirt-daemon,libvirt-daemon-driver-qemu,qemu-system-x86,qemu-utils,iproute2
MIRROR=${MIRROR:-$("$ROOT/hack/guest/apt-mirror.sh" "$SUITE")}
TARGET=""

log() { echo "build-launcher-image: $*" >&2; }

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

build_launcher() {
  mkdir -p "$ROOT/_output/bin"
  (cd "$ROOT" && go build -o _output/bin/virt-launcher ./cmd/virt-launcher)
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
  # libvirtd 9.0 resolves both the user and the group libvirt-qemu at start.
  grep -q '^kvm:' "$ROOTFS/etc/group" || chroot "$ROOTFS" groupadd --system kvm
  grep -q '^libvirt-qemu:' "$ROOTFS/etc/group" || chroot "$ROOTFS" groupadd --system libvirt-qemu
  grep -q '^libvirt-qemu:' "$ROOTFS/etc/passwd" ||
    chroot "$ROOTFS" useradd --system --gid libvirt-qemu --groups kvm --home-dir /var/lib/libvirt --shell /usr/sbin/nologin libvirt-qemu
  rm -rf "$ROOTFS"/usr/share/{doc,man,info,locale} "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/log/*
  # A container gets /etc/resolv.conf and /etc/hosts from the runtime.
  rm -f "$ROOTFS/etc/resolv.conf" "$ROOTFS/etc/hostname"
  install -m 0755 "$ROOT/_output/bin/virt-launcher" "$ROOTFS/usr/bin/virt-launcher"
  log "root file system: $(du -sh "$ROOTFS" | cut -f1)"
}

build_image() {
  if [[ -x $ROOT/_output/bin/imagebuild ]] && pgrep -x containerd >/dev/null; then
    "$ROOT/hack/cluster/image.sh" "$IMAGE" -dir "$ROOTFS" -entrypoint /usr/bin/virt-launcher
    log "$IMAGE imported into the cluster's containerd"
  elif [[ -x $ROOT/_output/bin/imagebuild ]]; then
    "$ROOT/_output/bin/imagebuild" -image "$IMAGE" -out "$WORK_DIR/image.tar" -dir "$ROOTFS" -entrypoint /usr/bin/virt-launcher >/dev/null
    log "$IMAGE written to $WORK_DIR/image.tar (no cluster running to import it into)"
  else
    log "no _output/bin/imagebuild (hack/cluster/build.sh); root file system left in $ROOTFS"
  fi
}

main() {
  [[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot)"; exit 1; }
  mkdir -p "$WORK_DIR"
  step "packages" install_deps
  step "virt-launcher" build_launcher
  step "debootstrap" bootstrap
  step "root file system" configure_rootfs
  step "image" build_image
}

main "$@"
