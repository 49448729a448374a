#!/usr/bin/env bash
# build-kernelboot.sh: builds Hangar's fast test guest from Debian packages.
#
# Outputs (under _output/guest/, git-ignored):
#   kernelboot/vmlinux              uncompressed kernel; QEMU boots it via PVH
#   kernelboot/initramfs.cpio.gz    busybox initramfs (see initramfs/init)
#   kernelboot-rootfs/boot/{vmlinux,initramfs.cpio.gz}
#                                   the same two files in the layout of a
#                                   KubeVirt kernelBoot container image
#                                   (kernelPath=/boot/vmlinux,
#                                    initrdPath=/boot/initramfs.cpio.gz)
#   kernelboot/initramfs-ssh.cpio.gz
#                                   the same initramfs followed by a second archive with
#                                   an SSH server (dropbear-bin) and scp (openssh-client's),
#                                   with the libraries they link; the kernel unpacks both.
#                                   Not started at boot: a test starts it on the console.
#                                   Also in kernelboot-rootfs/boot/.
#
# Inputs: Debian's kernel (debian-kernel.sh unpacks linux-image-amd64's, never
# installing it), busybox-static from apt, the SSH packages (fetched with apt-get download and
# unpacked, never installed), and the files in hack/guest/initramfs/. The build is skipped when a stamp of the package
# versions and of these files matches the previous build; FORCE=1 rebuilds.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
KERNELBOOT_DIR=$OUTPUT_DIR/kernelboot
KERNEL_DIR=$OUTPUT_DIR/debian-kernel
ROOTFS_DIR=$OUTPUT_DIR/kernelboot-rootfs
STAMP_FILE=$KERNELBOOT_DIR/.inputs

readonly PACKAGES=(busybox-static xz-utils cpio gzip kmod qemu-system-x86)

# Modules the guest loads at boot, by purpose; dependencies are added at
# build time. "net" brings up eth0 (virtio-net as KubeVirt's default model,
# e1000 as the common alternative); "block" mounts a root disk for the
# containerDisk mode (virtio-blk, virtio-scsi or SATA disks with ext4); "acpi"
# turns the ACPI power button into an input event (button) on
# /dev/input/eventN (evdev), which busybox acpid reads.
readonly NET_MODULES=(virtio_pci virtio_net e1000)
readonly BLOCK_MODULES=(virtio_pci virtio_blk virtio_scsi ahci sd_mod crc32c_generic ext4)
readonly ACPI_MODULES=(button evdev)
# "efi": efivarfs, for the UEFI guest's firmware report (initramfs/firmware.sh).
readonly EFI_MODULES=(efivarfs)
# "agent": the virtio-serial port of qemu-guest-agent, when a second archive brings it
# (build-uefi.sh).
readonly AGENT_MODULES=(virtio_pci virtio_console)

# The SSH archive's packages: dropbear's server, the libraries it links that the host does not
# have, and openssh-client for scp (the remote end of `scp -t`, which virtctl scp runs).
readonly SSH_PACKAGES=(dropbear-bin libtomcrypt1 libtommath1 openssh-client)

SCRIPT_START=$(date +%s.%N)

log() { echo "build-kernelboot: $*" >&2; }

elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# run_step NAME FUNCTION [ARGS...]: runs one build step and reports how long
# it took, so slow steps are visible in CI logs.
run_step() {
  local name=$1 start
  shift
  start=$(date +%s.%N)
  log "step '$name' ..."
  "$@"
  log "step '$name' done in $(elapsed_since "$start")s"
}

package_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

install_packages() {
  local missing=() package
  for package in "${PACKAGES[@]}"; do
    package_installed "$package" || missing+=("$package")
  done
  if (( ${#missing[@]} == 0 )); then
    log "packages already installed: ${PACKAGES[*]}"
    return 0
  fi
  log "installing ${missing[*]}"
  apt-get update -qq
  # No recommends: QEMU's would pull more than this guest needs.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

candidate() { apt-cache policy "$1" | sed -n 's/^ *Candidate: //p'; }

# inputs_fingerprint: everything a rebuild depends on, one line each.
inputs_fingerprint() {
  cat "$KERNEL_DIR/.package"
  dpkg-query -W -f='${Package} ${Version}\n' busybox-static
  local p
  for p in "${SSH_PACKAGES[@]}"; do
    echo "$p $(candidate "$p")"
  done
  (cd "$GUEST_DIR" && sha256sum build-kernelboot.sh debian-kernel.sh vmlinux-from-bzimage.sh initramfs/*)
}

extract_vmlinux() {
  local release=$1
  "$GUEST_DIR/vmlinux-from-bzimage.sh" "$KERNEL_DIR/boot/vmlinuz-$release" "$KERNELBOOT_DIR/vmlinux"
}

# module_closure RELEASE MODULE...: the modules and their dependencies, each
# after what it depends on, one "name path" line each. Built-in modules
# (filename "(builtin)") are left out.
module_closure() {
  local release=$1
  shift
  declare -A seen=()
  visit() {
    local name=${1//-/_} file deps dep
    [[ -n "${seen[$name]:-}" ]] && return 0
    seen[$name]=1
    file=$(modinfo -b "$KERNEL_DIR" -k "$release" -F filename "$name" 2>/dev/null | head -n1) || true
    if [[ -z "$file" ]]; then
      log "module $name not found for $release"
      return 1
    fi
    [[ "$file" == "(builtin)" ]] && return 0
    deps=$(modinfo -b "$KERNEL_DIR" -k "$release" -F depends "$name" | tr ',' ' ')
    for dep in $deps; do
      visit "$dep"
    done
    echo "$name $file"
  }
  local module
  for module in "$@"; do
    visit "$module"
  done
}

# install_module_set RELEASE STAGING SET MODULE...: copies a module set into
# the initramfs with its load order in /lib/modules/hangar/SET.order.
install_module_set() {
  local release=$1 staging=$2 set=$3
  shift 3
  local dir=$staging/lib/modules/hangar name file
  mkdir -p "$dir"
  : > "$dir/$set.order"
  while read -r name file; do
    cp "$file" "$dir/$name.ko"
    echo "$name" >> "$dir/$set.order"
  done < <(module_closure "$release" "$@")
}

build_initramfs() {
  local release=$1 staging
  staging=$(mktemp -d "$KERNELBOOT_DIR/initramfs.XXXXXX")

  mkdir -p "$staging"/{bin,sbin,usr/bin,usr/sbin,etc/udhcpc,etc/acpi/PWRF,lib/hangar,proc,sys,dev,run,tmp,root,newroot}
  chmod 1777 "$staging/tmp"
  cp /bin/busybox "$staging/bin/busybox"
  # Links for every applet, made here rather than at boot: one less step on
  # the path to the banner. The host's busybox-static is the same binary.
  local applet
  for applet in $(/bin/busybox --list-full); do
    [[ "$applet" == bin/busybox ]] && continue
    ln -sf /bin/busybox "$staging/$applet"
  done

  install -m 0755 "$GUEST_DIR/initramfs/init" "$staging/init"
  install -m 0755 "$GUEST_DIR/initramfs/hangar.script" "$staging/etc/udhcpc/hangar.script"
  install -m 0644 "$GUEST_DIR/initramfs/announce.sh" "$staging/lib/hangar/announce.sh"
  install -m 0644 "$GUEST_DIR/initramfs/firmware.sh" "$staging/lib/hangar/firmware.sh"
  # busybox acpid's action for the power button (KEY_POWER → PWRF/00000080).
  install -m 0755 "$GUEST_DIR/initramfs/powerbutton" "$staging/etc/acpi/PWRF/00000080"
  install -m 0644 "$GUEST_DIR/initramfs/inittab" "$staging/etc/inittab"
  install -m 0644 "$GUEST_DIR/initramfs/profile" "$staging/etc/profile"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$staging/etc/passwd"
  echo 'root:x:0:' > "$staging/etc/group"
  echo 'tty:x:5:' >> "$staging/etc/group"
  echo localhost > "$staging/etc/hostname"

  install_module_set "$release" "$staging" net "${NET_MODULES[@]}"
  install_module_set "$release" "$staging" block "${BLOCK_MODULES[@]}"
  install_module_set "$release" "$staging" acpi "${ACPI_MODULES[@]}"
  install_module_set "$release" "$staging" efi "${EFI_MODULES[@]}"
  install_module_set "$release" "$staging" agent "${AGENT_MODULES[@]}"

  # Sorted names, root ownership and one modification time keep the archive
  # the same from one build to the next.
  find "$staging" -exec touch -h -d @0 {} +
  (cd "$staging" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio --quiet -o -H newc -R 0:0 --reproducible) \
    | gzip -9 -n > "$KERNELBOOT_DIR/initramfs.cpio.gz"
  rm -rf "$staging"
}

# build_ssh_archive: dropbear and scp with the shared libraries they link (as this Debian has
# them: the guest runs the same release), appended to the initramfs as a second archive.
build_ssh_archive() {
  local work=$KERNELBOOT_DIR/ssh pkgs staging bin lib
  rm -rf "$work"
  mkdir -p "$work/debs" "$work/pkgs"
  pkgs=$work/pkgs
  if [[ -z "$(candidate dropbear-bin)" || "$(candidate dropbear-bin)" == "(none)" ]]; then
    apt-get update -qq
  fi
  (cd "$work/debs" && apt-get download -qq "${SSH_PACKAGES[@]}")
  local deb
  for deb in "$work"/debs/*.deb; do
    dpkg-deb -x "$deb" "$pkgs"
  done
  staging=$work/staging
  mkdir -p "$staging/usr/sbin" "$staging/usr/bin" "$staging/etc/dropbear"
  cp "$pkgs/usr/sbin/dropbear" "$staging/usr/sbin/dropbear"
  cp "$pkgs/usr/bin/scp" "$staging/usr/bin/scp"
  for bin in "$staging/usr/sbin/dropbear" "$staging/usr/bin/scp"; do
    # The unpacked libraries first: the host has libc but not libtomcrypt.
    for lib in $(LD_LIBRARY_PATH="$pkgs/usr/lib/x86_64-linux-gnu" ldd "$bin" \
        | awk '/not found/ { print "MISSING:" $1 } /=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
      [[ "$lib" != MISSING:* ]] || { log "$(basename "$bin") needs ${lib#MISSING:}, which no package here has"; exit 1; }
      local dest=$staging${lib#"$pkgs"}
      mkdir -p "$(dirname "$dest")"
      cp -L "$lib" "$dest"
    done
  done
  find "$staging" -exec touch -h -d @0 {} +
  (cd "$staging" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -9 -n > "$work/ssh.cpio.gz"
  cat "$KERNELBOOT_DIR/initramfs.cpio.gz" "$work/ssh.cpio.gz" > "$KERNELBOOT_DIR/initramfs-ssh.cpio.gz"
  rm -rf "$work"
}

# package_rootfs: the kernelBoot container image layout. Hard links when the
# file system allows it, so the layout costs no space.
package_rootfs() {
  rm -rf "$ROOTFS_DIR"
  mkdir -p "$ROOTFS_DIR/boot"
  local file
  for file in vmlinux initramfs.cpio.gz initramfs-ssh.cpio.gz; do
    ln "$KERNELBOOT_DIR/$file" "$ROOTFS_DIR/boot/$file" 2>/dev/null \
      || cp "$KERNELBOOT_DIR/$file" "$ROOTFS_DIR/boot/$file"
  done
}

report() {
  local release=$1
  log "kernel $release"
  ls -l "$KERNELBOOT_DIR/vmlinux" "$KERNELBOOT_DIR/initramfs.cpio.gz" "$KERNELBOOT_DIR/initramfs-ssh.cpio.gz" "$KERNEL_DIR/boot/vmlinuz-$release" \
    | awk '{ printf "build-kernelboot: %-60s %8.1f MiB\n", $NF, $5 / 1048576 }' >&2
  log "total $(elapsed_since "$SCRIPT_START")s"
}

main() {
  run_step "install packages" install_packages
  local release
  release=$("$GUEST_DIR/debian-kernel.sh")
  mkdir -p "$KERNELBOOT_DIR"

  local fingerprint
  fingerprint=$(inputs_fingerprint)
  if [[ "${FORCE:-0}" != 1 && -f "$STAMP_FILE" && "$(cat "$STAMP_FILE")" == "$fingerprint" \
        && -s "$KERNELBOOT_DIR/vmlinux" && -s "$KERNELBOOT_DIR/initramfs.cpio.gz" \
        && -s "$KERNELBOOT_DIR/initramfs-ssh.cpio.gz" && -e "$ROOTFS_DIR/boot/vmlinux" ]]; then
    log "inputs unchanged, nothing to rebuild (FORCE=1 rebuilds)"
    report "$release"
    return 0
  fi
  rm -f "$STAMP_FILE"

  run_step "extract vmlinux" extract_vmlinux "$release"
  run_step "build initramfs" build_initramfs "$release"
  run_step "build SSH archive" build_ssh_archive
  run_step "package kernelBoot rootfs" package_rootfs
  echo "$fingerprint" > "$STAMP_FILE"
  report "$release"
}

main "$@"
