#!/usr/bin/env bash
# build-containerdisk.sh: builds Hangar's small Debian containerDisk.
#
# Output (under _output/guest/, git-ignored):
#   containerdisk-rootfs/disk/debian.qcow2   KubeVirt's containerDisk layout
#
# The disk: an MBR with two partitions, made without loop devices or mounts
# (mke2fs -d, mtools), so it builds in an unprivileged-enough container.
#   1  FAT, label HANGARBOOT: SYSLINUX, Debian's bzImage and Hangar's busybox
#      initramfs (build-kernelboot.sh), which mounts the root and switches
#      to it. So the disk boots by itself from the BIOS ...
#   2  ext4, label hangar-root: debootstrap minbase + systemd-sysv + udev,
#      the kernel modules a VM needs, root autologin on ttyS0, and
#      hangar-nocloud (a NoCloud "cidata" seed reader that applies the
#      hostname, runs user-data and prints HANGAR-GUEST-READY on ttyS0).
# ... or faster through kernelBoot with the kernelboot guest's vmlinux and
# initramfs and the kernel command line "root=LABEL=hangar-root", which skips
# the BIOS, the boot loader and the kernel's decompression.
#
# debootstrap fetches from the mirror apt uses (apt-mirror.sh); its result is
# cached per suite, mirror and package list. The disk is rebuilt only when
# an input changes; FORCE=1 rebuilds the disk, FORCE=2 also re-bootstraps.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
WORK_DIR=$OUTPUT_DIR/containerdisk
KERNELBOOT_DIR=$OUTPUT_DIR/kernelboot
KERNEL_DIR=$OUTPUT_DIR/debian-kernel
DISK_DIR=$OUTPUT_DIR/containerdisk-rootfs/disk
DISK=$DISK_DIR/debian.qcow2
STAMP_FILE=$WORK_DIR/.inputs

SUITE=${SUITE:-bookworm}
readonly VARIANT=minbase
# systemd-sysv + udev: the init that KubeVirt users' images have, and udev
# loads the drivers for whatever devices the VM gets. iproute2 lets tests
# look at the network. dbus lets systemd-logind run, which powers the guest
# off on the ACPI power button (a graceful stop), as a cloud image does.
readonly INCLUDE=systemd-sysv,udev,kmod,iproute2,dbus
readonly PACKAGES=(debootstrap wget e2fsprogs fdisk dosfstools mtools syslinux syslinux-common qemu-utils kmod)
# Modules copied into the root file system (with their dependencies): the
# devices a KubeVirt VM gets (virtio, e1000/e1000e, SATA or IDE CD-ROM for the
# cloud-init seed, SCSI), the file systems of a seed (iso9660, vfat), and the
# ACPI power button as an input device (button, evdev) for systemd-logind.
readonly ROOTFS_MODULES=(virtio_pci virtio_blk virtio_scsi virtio_net virtio_console virtio_rng
  virtio_balloon e1000 e1000e ahci ata_piix sd_mod sr_mod isofs vfat nls_cp437 nls_iso8859_1 nls_utf8
  ext4 crc32c_generic autofs4 button evdev)
readonly BOOT_PART_MIB=32
readonly ROOT_LABEL=hangar-root
readonly KERNEL_CMDLINE="root=LABEL=$ROOT_LABEL rw console=tty0 console=ttyS0 quiet no_timer_check"

SCRIPT_START=$(date +%s.%N)
BOOTSTRAP_TARGET=""   # set while debootstrap runs, for cleanup

log() { echo "build-containerdisk: $*" >&2; }

elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

run_step() {
  local name=$1 start
  shift
  start=$(date +%s.%N)
  log "step '$name' ..."
  "$@"
  log "step '$name' done in $(elapsed_since "$start")s"
}

# cleanup: debootstrap mounts proc and sys inside its target; never leave
# them behind when it fails or is interrupted.
cleanup() {
  [[ -n "$BOOTSTRAP_TARGET" ]] || return 0
  local mountpoint
  for mountpoint in $(awk -v t="$BOOTSTRAP_TARGET" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$mountpoint" 2>/dev/null || true
  done
}
trap cleanup EXIT

package_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

install_packages() {
  local missing=() package
  for package in "${PACKAGES[@]}"; do
    package_installed "$package" || missing+=("$package")
  done
  if (( ${#missing[@]} )); then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build_kernelboot() {
  "$GUEST_DIR/build-kernelboot.sh"
}

bootstrap_key() {
  echo "$SUITE $VARIANT $INCLUDE $MIRROR" | sha256sum | cut -c1-16
}

# bootstrap_rootfs: debootstrap into a cached directory, once per key.
bootstrap_rootfs() {
  local target
  target=$WORK_DIR/bootstrap-$(bootstrap_key)
  BOOTSTRAP_DIR=$target
  if [[ "${FORCE:-0}" != 2 && -f "$target.done" ]]; then
    log "debootstrap result cached in $target"
    return 0
  fi
  rm -rf "$target" "$target.done"
  mkdir -p "$target"
  BOOTSTRAP_TARGET=$target
  log "debootstrap $SUITE ($VARIANT + $INCLUDE) from $MIRROR"
  if ! debootstrap --variant="$VARIANT" --include="$INCLUDE" --components=main \
      "$SUITE" "$target" "$MIRROR" > "$WORK_DIR/debootstrap.log" 2>&1; then
    tail -n 20 "$WORK_DIR/debootstrap.log" >&2
    log "debootstrap failed; full log in $WORK_DIR/debootstrap.log"
    return 1
  fi
  cleanup
  BOOTSTRAP_TARGET=""
  touch "$target.done"
}

# copy_rootfs: a fresh copy of the bootstrap to configure, so the cache
# stays pristine.
copy_rootfs() {
  ROOTFS=$WORK_DIR/rootfs
  rm -rf "$ROOTFS"
  cp -a "$BOOTSTRAP_DIR" "$ROOTFS"
}

# trim_rootfs: what a test VM never reads. Keeps the image small.
trim_rootfs() {
  rm -rf "$ROOTFS"/usr/share/{doc,man,info,locale,lintian,linda}/* \
    "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
    "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/*.log "$ROOTFS"/var/cache/debconf/*-old \
    "$ROOTFS"/usr/share/zoneinfo/right "$ROOTFS"/usr/share/zoneinfo/posix
  # Masked: timers that would wake a TCG guest for nothing, and early-boot
  # units a short-lived test VM has no use for. Under TCG every process
  # started on the way to the banner costs CPU time on the one vCPU.
  local unit
  for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
      fstrim.timer systemd-tmpfiles-clean.timer systemd-timesyncd.service \
      dev-hugepages.mount dev-mqueue.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
      sys-fs-fuse-connections.mount sys-kernel-config.mount proc-sys-fs-binfmt_misc.automount \
      systemd-pstore.service systemd-random-seed.service systemd-journal-flush.service \
      systemd-sysusers.service systemd-update-utmp.service systemd-update-utmp-runlevel.service \
      modprobe@drm.service modprobe@fuse.service modprobe@efi_pstore.service \
      modprobe@configfs.service modprobe@loop.service modprobe@dm_mod.service; do
    ln -sfn /dev/null "$ROOTFS/etc/systemd/system/$unit"
  done
}

# module_closure: the modules and their dependencies, as paths below
# lib/modules/RELEASE of the unpacked kernel (built-in ones left out).
module_closure() {
  local release=$1
  shift
  declare -A seen=()
  visit() {
    local name=${1//-/_} file dep
    [[ -n "${seen[$name]:-}" ]] && return 0
    seen[$name]=1
    file=$(modinfo -b "$KERNEL_DIR" -k "$release" -F filename "$name" 2>/dev/null | head -n1) || true
    [[ -n "$file" ]] || { log "module $name not found for $release"; return 1; }
    [[ "$file" == "(builtin)" ]] && return 0
    for dep in $(modinfo -b "$KERNEL_DIR" -k "$release" -F depends "$name" | tr ',' ' '); do
      visit "$dep"
    done
    echo "${file#"$KERNEL_DIR/lib/modules/$release/"}"
  }
  local module
  for module in "$@"; do
    visit "$module"
  done
}

install_kernel_modules() {
  local release=$1 path
  local source=$KERNEL_DIR/lib/modules/$release target=$ROOTFS/usr/lib/modules/$release
  rm -rf "$target"
  mkdir -p "$target"
  while read -r path; do
    install -D -m 0644 "$source/$path" "$target/$path"
  done < <(module_closure "$release" "${ROOTFS_MODULES[@]}")
  cp "$source"/modules.builtin "$source"/modules.builtin.modinfo "$source"/modules.order "$target/"
  depmod -b "$ROOTFS" "$release"
}

configure_rootfs() {
  local files=$GUEST_DIR/containerdisk
  echo localhost > "$ROOTFS/etc/hostname"
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > "$ROOTFS/etc/hosts"
  # No entry for /: the initramfs mounts it rw already, and an fstab line
  # would make systemd wait for udev to announce the root device.
  echo '# / is mounted read-write by the initramfs (root=LABEL=hangar-root).' > "$ROOTFS/etc/fstab"
  # Empty, not missing: systemd then makes a transient id per boot without
  # running its first-boot setup. Every VM of the image gets its own.
  : > "$ROOTFS/etc/machine-id"
  rm -f "$ROOTFS/var/lib/dbus/machine-id"
  # Root without a password, for the console (there is no other login).
  sed -i 's/^root:[^:]*:/root::/' "$ROOTFS/etc/shadow"
  # Host resolv.conf copied by debootstrap means nothing in a VM.
  : > "$ROOTFS/etc/resolv.conf"

  install -D -m 0755 "$files/hangar-nocloud" "$ROOTFS/usr/local/sbin/hangar-nocloud"
  install -D -m 0644 "$files/hangar-nocloud.service" "$ROOTFS/etc/systemd/system/hangar-nocloud.service"
  install -D -m 0644 "$files/serial-getty-autologin.conf" \
    "$ROOTFS/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"
  install -D -m 0644 "$files/80-hangar-dhcp.network" "$ROOTFS/etc/systemd/network/80-hangar-dhcp.network"
  install -D -m 0644 "$files/journald.conf" "$ROOTFS/etc/systemd/journald.conf.d/hangar.conf"

  # "systemctl enable" by hand: there is no systemd to ask on the build host.
  local wants=$ROOTFS/etc/systemd/system
  mkdir -p "$wants/multi-user.target.wants" "$wants/getty.target.wants" "$wants/sockets.target.wants"
  ln -sfn /etc/systemd/system/hangar-nocloud.service "$wants/multi-user.target.wants/hangar-nocloud.service"
  ln -sfn /lib/systemd/system/serial-getty@.service "$wants/getty.target.wants/serial-getty@ttyS0.service"
  ln -sfn /lib/systemd/system/systemd-networkd.service "$wants/multi-user.target.wants/systemd-networkd.service"
  ln -sfn /lib/systemd/system/systemd-networkd.socket "$wants/sockets.target.wants/systemd-networkd.socket"
  # The VGA console is not watched by tests; one getty there is enough.
  ln -sfn /dev/null "$wants/getty-static.service"
}

# make_boot_partition RELEASE IMAGE: a FAT image with SYSLINUX, the kernel
# and the initramfs, built with mtools (no mount needed).
make_boot_partition() {
  local release=$1 image=$2
  rm -f "$image"
  mkfs.fat -C -n HANGARBOOT "$image" $((BOOT_PART_MIB * 1024)) >/dev/null
  cat > "$WORK_DIR/syslinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT hangar
PROMPT 0
TIMEOUT 0
LABEL hangar
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND $KERNEL_CMDLINE
CFG
  mcopy -i "$image" "$KERNEL_DIR/boot/vmlinuz-$release" ::vmlinuz
  mcopy -i "$image" "$KERNELBOOT_DIR/initramfs.cpio.gz" ::initrd.gz
  mcopy -i "$image" "$WORK_DIR/syslinux.cfg" ::syslinux.cfg
  syslinux --install "$image"
}

build_disk() {
  local release=$1
  local raw=$WORK_DIR/disk.raw boot=$WORK_DIR/boot.fat
  local used_mib root_mib
  used_mib=$(du -sm "$ROOTFS" | cut -f1)
  # Room for the guest's writes; qcow2 stores only what is used.
  root_mib=$(( (used_mib * 12 / 10 + 512 + 63) / 64 * 64 ))
  local boot_start=2048 boot_sectors=$((BOOT_PART_MIB * 2048))
  local root_start=$((boot_start + boot_sectors)) root_sectors=$((root_mib * 2048))

  make_boot_partition "$release" "$boot"
  rm -f "$raw"
  truncate -s $(( (root_start + root_sectors) * 512 )) "$raw"
  sfdisk --quiet "$raw" <<TABLE
label: dos
start=$boot_start, size=$boot_sectors, type=c, bootable
start=$root_start, size=$root_sectors, type=83
TABLE
  dd if=/usr/lib/syslinux/mbr/mbr.bin of="$raw" bs=440 count=1 conv=notrunc status=none
  dd if="$boot" of="$raw" bs=1M seek=1 conv=notrunc,sparse status=none
  # The root file system straight into its partition: mke2fs -d copies a
  # directory tree, -E offset places it, no loop device involved.
  mke2fs -q -F -t ext4 -L "$ROOT_LABEL" -d "$ROOTFS" -m 0 -E "offset=$((root_start * 512))" \
    -O ^has_journal "$raw" "${root_mib}M"
  mkdir -p "$DISK_DIR"
  qemu-img convert -q -c -O qcow2 "$raw" "$DISK.tmp"
  mv "$DISK.tmp" "$DISK"
  rm -f "$raw" "$boot"
  log "root file system: ${used_mib} MiB used in a ${root_mib} MiB partition"
}

inputs_fingerprint() {
  echo "suite=$SUITE mirror=$MIRROR include=$INCLUDE"
  cat "$KERNELBOOT_DIR/.inputs"
  (cd "$GUEST_DIR" && sha256sum build-containerdisk.sh containerdisk/*)
}

report() {
  log "$(ls -l "$DISK" | awk '{ printf "%s %.1f MiB", $NF, $5 / 1048576 }')"
  qemu-img info "$DISK" | grep -E 'virtual size|disk size' | sed 's/^/build-containerdisk:   /' >&2
  log "total $(elapsed_since "$SCRIPT_START")s"
}

main() {
  run_step "install packages" install_packages
  run_step "build kernelboot guest" build_kernelboot
  MIRROR=${MIRROR:-$("$GUEST_DIR/apt-mirror.sh" "$SUITE")}
  local release
  # build-kernelboot.sh unpacked it.
  release=$("$GUEST_DIR/debian-kernel.sh")
  mkdir -p "$WORK_DIR"

  local fingerprint
  fingerprint=$(inputs_fingerprint)
  if [[ "${FORCE:-0}" == 0 && -f "$STAMP_FILE" && "$(cat "$STAMP_FILE")" == "$fingerprint" && -s "$DISK" ]]; then
    log "inputs unchanged, nothing to rebuild (FORCE=1 rebuilds)"
    report
    return 0
  fi
  rm -f "$STAMP_FILE"

  run_step "debootstrap" bootstrap_rootfs
  run_step "copy rootfs" copy_rootfs
  run_step "trim rootfs" trim_rootfs
  run_step "install kernel modules" install_kernel_modules "$release"
  run_step "configure rootfs" configure_rootfs
  run_step "build disk image" build_disk "$release"
  rm -rf "$ROOTFS"
  echo "$fingerprint" > "$STAMP_FILE"
  report
}

main "$@"
