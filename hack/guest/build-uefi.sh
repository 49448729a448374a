#!/usr/bin/env bash
# build-uefi.sh: builds Hangar's UEFI test guest from Debian packages.
#
# Output (under _output/guest/, git-ignored):
#   uefi-rootfs/disk/uefi.qcow2   a GPT disk with one EFI system partition, in the layout of
#                                 a KubeVirt containerDisk (the one file under /disk)
#
# The partition holds Debian's signed boot chain, as an installed Debian has it:
#   EFI/BOOT/BOOTX64.EFI   shim (shim-signed), signed by Microsoft's UEFI CA, which the
#                          Secure Boot variables of Debian's OVMF (OVMF_VARS_4M.ms.fd) trust
#   EFI/BOOT/grubx64.efi   GRUB (grub-efi-amd64-signed), signed by Debian; shim checks it
#   vmlinuz                Debian's kernel (linux-image-amd64), signed by Debian; GRUB has
#                          shim check it
#   initramfs.cpio.gz      build-kernelboot.sh's busybox initramfs, whose /init reports
#                          Secure Boot, an EFI variable and the TPM (initramfs/firmware.sh)
#                          and prints the ready banner
#   agent.cpio.gz          a second initramfs archive (the kernel unpacks both):
#                          qemu-ga (qemu-guest-agent) with the libraries it links and an
#                          os-release; /init starts it on its virtio-serial port
#   grub.cfg               boots the kernel with both archives at once, on the serial
#                          console; in every place Debian's signed GRUB looks for it
# So with secureBoot the whole chain is verified by the firmware's keys, and the same disk
# boots without Secure Boot too. The packages are fetched with apt-get download and unpacked,
# never installed. Rebuilt when the package versions or these scripts change; FORCE=1
# rebuilds.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
UEFI_DIR=$OUTPUT_DIR/uefi
KERNEL_DIR=$OUTPUT_DIR/debian-kernel
ROOTFS_DIR=$OUTPUT_DIR/uefi-rootfs
STAMP_FILE=$UEFI_DIR/.inputs

readonly TOOLS=(mtools fdisk qemu-utils)
readonly BOOT_PACKAGES=(shim-signed grub-efi-amd64-signed qemu-guest-agent)
readonly ESP_MIB=48

log() { echo "build-uefi: $*" >&2; }

package_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

install_tools() {
  local missing=() p
  for p in "${TOOLS[@]}"; do
    package_installed "$p" || missing+=("$p")
  done
  (( ${#missing[@]} == 0 )) && return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# candidate PACKAGE: the version apt would install.
candidate() { apt-cache policy "$1" | sed -n 's/^ *Candidate: //p'; }

inputs_fingerprint() {
  local p
  for p in "${BOOT_PACKAGES[@]}"; do
    echo "$p $(candidate "$p")"
  done
  cat "$OUTPUT_DIR/kernelboot/.inputs"
  (cd "$GUEST_DIR" && sha256sum build-uefi.sh)
}

# fetch_boot_chain: shim and GRUB, unpacked into $UEFI_DIR/pkgs.
fetch_boot_chain() {
  local debs=$UEFI_DIR/debs
  rm -rf "$debs" "$UEFI_DIR/pkgs"
  mkdir -p "$debs" "$UEFI_DIR/pkgs"
  if [[ -z "$(candidate shim-signed)" || "$(candidate shim-signed)" == "(none)" ]]; then
    apt-get update -qq
  fi
  (cd "$debs" && apt-get download -qq "${BOOT_PACKAGES[@]}")
  # apt-get download runs as the _apt user when it can; its files may be root's or _apt's.
  local deb
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$UEFI_DIR/pkgs"
  done
}

# build_agent_archive: qemu-ga from the package, the shared libraries it needs (as this
# Debian has them: the guest runs the same release) and an os-release the agent reports.
build_agent_archive() {
  local staging qga=$UEFI_DIR/pkgs/usr/sbin/qemu-ga lib
  [[ -x "$qga" ]] || { log "no qemu-ga in qemu-guest-agent"; exit 1; }
  staging=$(mktemp -d "$UEFI_DIR/agent.XXXXXX")
  mkdir -p "$staging/usr/sbin" "$staging/etc" "$staging/var/run"
  cp "$qga" "$staging/usr/sbin/qemu-ga"
  for lib in $(ldd "$qga" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
    mkdir -p "$staging$(dirname "$lib")"
    cp -L "$lib" "$staging$lib"
  done
  cat > "$staging/etc/os-release" <<'OS'
PRETTY_NAME="Hangar UEFI test guest (busybox on Debian 12's kernel)"
NAME="Hangar test guest"
ID=hangar-test
ID_LIKE=debian
VERSION_ID="12"
OS
  (cd "$staging" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -9 -n > "$UEFI_DIR/agent.cpio.gz"
  rm -rf "$staging"
}

build_disk() {
  local pkgs=$UEFI_DIR/pkgs esp=$UEFI_DIR/esp.img disk=$UEFI_DIR/disk.img release cfg
  release=$("$GUEST_DIR/debian-kernel.sh")
  local shim=$pkgs/usr/lib/shim/shimx64.efi.signed
  local grub=$pkgs/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed
  [[ -r "$shim" && -r "$grub" ]] || { log "no shimx64.efi.signed or grubx64.efi.signed in the packages"; exit 1; }

  cfg=$UEFI_DIR/grub.cfg
  cat > "$cfg" <<'CFG'
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
menuentry "Hangar UEFI test guest" {
  linux /vmlinuz console=ttyS0 quiet no_timer_check
  initrd /initramfs.cpio.gz /agent.cpio.gz
}
CFG

  rm -f "$esp"
  truncate -s "${ESP_MIB}M" "$esp"
  mformat -i "$esp" -F -v HANGAR-ESP ::
  mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/EFI/debian ::/boot ::/boot/grub
  mcopy -i "$esp" "$shim" ::/EFI/BOOT/BOOTX64.EFI
  mcopy -i "$esp" "$grub" ::/EFI/BOOT/grubx64.efi
  # Debian's signed GRUB reads $prefix/grub.cfg (prefix /EFI/debian, or /boot/grub when it
  # searches), else the one next to itself.
  mcopy -i "$esp" "$cfg" ::/EFI/BOOT/grub.cfg
  mcopy -i "$esp" "$cfg" ::/EFI/debian/grub.cfg
  mcopy -i "$esp" "$cfg" ::/boot/grub/grub.cfg
  mcopy -i "$esp" "$KERNEL_DIR/boot/vmlinuz-$release" ::/vmlinuz
  mcopy -i "$esp" "$OUTPUT_DIR/kernelboot/initramfs.cpio.gz" ::/initramfs.cpio.gz
  mcopy -i "$esp" "$UEFI_DIR/agent.cpio.gz" ::/agent.cpio.gz

  # GPT: the ESP from 1 MiB, then the image.
  rm -f "$disk"
  truncate -s "$(( ESP_MIB + 2 ))M" "$disk"
  printf 'label: gpt\nstart=2048, size=%d, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="EFI system partition"\n' \
    $(( ESP_MIB * 2048 )) | sfdisk -q "$disk"
  dd if="$esp" of="$disk" bs=1M seek=1 conv=notrunc status=none

  rm -rf "$ROOTFS_DIR"
  mkdir -p "$ROOTFS_DIR/disk"
  qemu-img convert -O qcow2 "$disk" "$ROOTFS_DIR/disk/uefi.qcow2"
  chmod 0644 "$ROOTFS_DIR/disk/uefi.qcow2"
  rm -f "$esp" "$disk"
}

main() {
  local start=$SECONDS
  install_tools
  "$GUEST_DIR/build-kernelboot.sh"
  mkdir -p "$UEFI_DIR"
  local fingerprint
  fingerprint=$(inputs_fingerprint)
  if [[ "${FORCE:-0}" != 1 && -f "$STAMP_FILE" && "$(cat "$STAMP_FILE")" == "$fingerprint" \
        && -s "$ROOTFS_DIR/disk/uefi.qcow2" ]]; then
    log "inputs unchanged, nothing to rebuild (FORCE=1 rebuilds)"
    return 0
  fi
  rm -f "$STAMP_FILE"
  fetch_boot_chain
  build_agent_archive
  build_disk
  echo "$fingerprint" > "$STAMP_FILE"
  log "$(du -h "$ROOTFS_DIR/disk/uefi.qcow2" | cut -f1) $ROOTFS_DIR/disk/uefi.qcow2 in $(( SECONDS - start ))s"
}

main "$@"
