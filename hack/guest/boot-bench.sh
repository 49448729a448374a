#!/usr/bin/env bash
# boot-bench.sh [RUNS]: the bare-QEMU baseline for Hangar's boot benchmarks.
# With BURST=N it instead starts N guests at once and prints when the last one printed
# the banner (the baseline of Hangar's burst of N VMIs):
#
#   bare-qemu kernelboot burst: 20 guests started at once, all bannered after 24.1s; host CPU 47.0 s busy, the guests 45.2 s
#
# Boots a test guest (default: the kernelBoot one, build-kernelboot.sh) RUNS
# times (default 10) with plain qemu-system-x86_64 under TCG and measures, with bootwait,
# the wall time from QEMU's start to the HANGAR-GUEST-READY line on the
# serial console; after each banner it types a command on the console and
# fails unless the answer comes back. Prints, for example:
#
#   bare-qemu kernelboot boot-to-banner: n=10 median=2.05s p95=2.31s min=1.98s max=2.33s
#   bare-qemu kernelboot console-roundtrip: n=10 median=0.12s p95=0.20s min=0.10s max=0.21s
#   bare-qemu kernelboot banner-to-shell-answer: n=10 median=1.1s ...
#
# console-roundtrip is one typed command's answer time; banner-to-shell-
# answer also counts commands typed before a shell was reading (bootwait
# retypes every second, because a starting getty flushes its input).
#
# Settings (environment):
#   GUEST=kernelboot      the busybox kernelBoot guest (default);
#         containerdisk   the Debian containerDisk booted by BIOS + SYSLINUX;
#         containerdisk-kernelboot  the containerDisk with vmlinux +
#                         initramfs + root=LABEL=hangar-root.
#                         Both containerDisk modes boot a fresh qcow2
#                         overlay each time and attach a NoCloud seed ISO
#                         (hostname=bench, a runcmd) as KubeVirt would; the
#                         banner must then carry hostname=bench.
#   CONSOLE=stdio|socket  stdio: -nographic, the console on QEMU's stdio
#                         (default); socket: -serial unix:PATH, QEMU dials
#                         bootwait's socket, as a launcher would read it
#   NIC=none|virtio       no NIC (default), or user-mode virtio-net, which
#                         also exercises the guest's DHCP
#   SCSI=none|virtio      no SCSI controller (default), or a virtio-scsi one,
#                         as every VMI's domain has (hotplugged disks go on it)
#   MACHINE=pc            QEMU machine type (q35 is what KubeVirt uses)
#   MEMORY=               guest memory in MiB: 128 for kernelboot, 256 for
#                         the containerDisk (the kernel needs >= 96)
#   APPEND_EXTRA=         more kernel parameters (e.g. hostname=bench)
#   TIMEOUT=120s          per-boot limit for the banner
#   BURST=                N guests at once instead of RUNS one after another
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
KERNELBOOT_DIR=$OUTPUT_DIR/kernelboot
BENCH_DIR=$OUTPUT_DIR/boot-bench
BOOTWAIT=$OUTPUT_DIR/bin/bootwait
CONTAINERDISK=$OUTPUT_DIR/containerdisk-rootfs/disk/debian.qcow2

RUNS=${1:-${RUNS:-10}}
GUEST=${GUEST:-kernelboot}
CONSOLE=${CONSOLE:-stdio}
NIC=${NIC:-none}
MACHINE=${MACHINE:-pc}
MEMORY=${MEMORY:-}
APPEND_EXTRA=${APPEND_EXTRA:-}
TIMEOUT=${TIMEOUT:-120s}
BURST=${BURST:-}
BOOTWAIT_FLAGS=()

log() { echo "boot-bench: $*" >&2; }

build_inputs() {
  "$GUEST_DIR/build-kernelboot.sh"
  case "$GUEST" in
    kernelboot) ;;
    containerdisk|containerdisk-kernelboot)
      "$GUEST_DIR/build-containerdisk.sh"
      build_seed
      ;;
    *) log "unknown GUEST=$GUEST"; exit 2 ;;
  esac
  mkdir -p "$(dirname "$BOOTWAIT")"
  (cd "$REPO_ROOT" && go build -o "$BOOTWAIT" ./hack/guest/bootwait)
}

# build_seed: a NoCloud seed ISO like KubeVirt's cloudInitNoCloud volume.
build_seed() {
  if ! command -v genisoimage >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends genisoimage >/dev/null
  fi
  local dir=$OUTPUT_DIR/boot-bench-seed
  rm -rf "$dir"
  mkdir -p "$dir"
  printf 'instance-id: boot-bench\nlocal-hostname: bench\n' > "$dir/meta-data"
  printf '#cloud-config\nruncmd:\n  - echo "HANGAR-RUNCMD $(hostname)" > /dev/ttyS0\n' > "$dir/user-data"
  genisoimage -quiet -output "$OUTPUT_DIR/boot-bench-seed.iso" -volid cidata -joliet -rock \
    "$dir/user-data" "$dir/meta-data"
}

# qemu_command SOCKET OVERLAY: the QEMU command line of one boot.
qemu_command() {
  local socket=$1 overlay=$2
  local cmd=(qemu-system-x86_64 -machine "$MACHINE" -accel tcg -m "$MEMORY" -smp 1 -no-reboot)
  case "$GUEST" in
    kernelboot)
      cmd+=(-kernel "$KERNELBOOT_DIR/vmlinux" -initrd "$KERNELBOOT_DIR/initramfs.cpio.gz"
        -append "console=ttyS0 quiet no_timer_check $APPEND_EXTRA")
      ;;
    containerdisk*)
      cmd+=(-drive "file=$overlay,if=virtio,format=qcow2"
        -drive "file=$OUTPUT_DIR/boot-bench-seed.iso,media=cdrom,format=raw,readonly=on")
      [[ "$GUEST" == containerdisk-kernelboot ]] && cmd+=(
        -kernel "$KERNELBOOT_DIR/vmlinux" -initrd "$KERNELBOOT_DIR/initramfs.cpio.gz"
        -append "root=LABEL=hangar-root rw console=ttyS0 quiet no_timer_check $APPEND_EXTRA")
      ;;
  esac
  case "$CONSOLE" in
    stdio) cmd+=(-nographic) ;;
    socket) cmd+=(-display none -monitor none -serial "unix:$socket") ;;
    *) log "unknown CONSOLE=$CONSOLE"; exit 2 ;;
  esac
  case "${SCSI:-none}" in
    none) ;;
    virtio) cmd+=(-device virtio-scsi-pci) ;;
    *) log "unknown SCSI=$SCSI"; exit 2 ;;
  esac
  case "$NIC" in
    none) cmd+=(-nic none) ;;
    virtio) cmd+=(-nic "user,model=virtio-net-pci") ;;
    *) log "unknown NIC=$NIC"; exit 2 ;;
  esac
  printf '%s\n' "${cmd[@]}"
}

# boot_once N: one measured boot; appends "banner roundtrip" to the results.
boot_once() {
  local run=$1 socket=$BENCH_DIR/serial-$1.sock overlay=$BENCH_DIR/overlay-$1.qcow2 source
  local -a qemu
  if [[ "$GUEST" == containerdisk* ]]; then
    # A fresh copy-on-write layer per boot, as a containerDisk gets.
    rm -f "$overlay"
    qemu-img create -q -f qcow2 -b "$CONTAINERDISK" -F qcow2 "$overlay"
  fi
  mapfile -t qemu < <(qemu_command "$socket" "$overlay")
  case "$CONSOLE" in
    stdio) source=(-stdio) ;;
    socket) source=(-listen "$socket") ;;
  esac
  local line
  if ! line=$("$BOOTWAIT" "${source[@]}" "${BOOTWAIT_FLAGS[@]}" -timeout "$TIMEOUT" -log "$BENCH_DIR/console-$run.log" -- "${qemu[@]}" 2>"$BENCH_DIR/stderr-$run.log"); then
    log "boot $run failed:"
    sed 's/^/  /' "$BENCH_DIR/stderr-$run.log" >&2
    log "console log: $BENCH_DIR/console-$run.log"
    return 1
  fi
  if [[ "$GUEST" == containerdisk* ]] && ! grep -aq 'HANGAR-GUEST-READY hostname=bench' "$BENCH_DIR/console-$run.log"; then
    log "boot $run: the banner lacks hostname=bench: the seed was not applied"
    return 1
  fi
  log "boot $run/$RUNS: $line"
  # "banner=2.051s roundtrip=0.184s shell=1.210s attempts=2" -> "2.051 0.184 1.210"
  sed -n 's/^banner=\([0-9.]*\)s roundtrip=\([0-9.]*\)s shell=\([0-9.]*\)s.*/\1 \2 \3/p' <<<"$line" >> "$BENCH_DIR/results.txt"
}

# summarize NAME COLUMN: median and p95 (nearest rank) of one column.
summarize() {
  local name=$1 column=$2
  awk -v c="$column" '{ print $c }' "$BENCH_DIR/results.txt" | sort -g | awk -v name="$name" -v guest="$GUEST" '
    { v[NR] = $1 }
    END {
      n = NR
      if (n % 2) median = v[(n + 1) / 2]; else median = (v[n / 2] + v[n / 2 + 1]) / 2
      rank = int(0.95 * n); if (rank < 0.95 * n) rank++
      printf "bare-qemu %s %s: n=%d median=%.2fs p95=%.2fs min=%.2fs max=%.2fs\n", guest, name, n, median, v[rank], v[1], v[n]
    }'
}

# burst N: N boots started at once; prints when the last banner came. Every guest runs until
# then, as a VMI does: one that stopped at its banner would leave the others its CPU. Nothing
# is typed, as in Hangar's burst.
burst() {
  local n=$1 start end i failed=0 busy guests
  local -a pids=()
  BOOTWAIT_FLAGS=(-roundtrip=false -keep)
  trap stop_burst_guests EXIT
  busy=$(busy_ticks)
  start=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    boot_once "$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do
    wait "$i" || failed=1
  done
  end=$(date +%s.%N)
  busy=$(($(busy_ticks) - busy))
  guests=$(guest_ticks)
  stop_burst_guests
  ((failed == 0)) || { log "a boot of the burst failed"; return 1; }
  awk -v s="$start" -v e="$end" -v n="$n" -v g="$GUEST" -v b="$busy" -v q="$guests" \
    'BEGIN { printf "bare-qemu %s burst: %d guests started at once, all bannered after %.1fs; host CPU %.1f s busy, the guests %.1f s\n", g, n, e - s, b / 100, q / 100 }'
}

# busy_ticks: the host's busy CPU time so far, all CPUs, in USER_HZ ticks (1/100 s).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }

# guest_ticks: the CPU time the burst's QEMUs used, in ticks.
guest_ticks() {
  local pid sum=0 ticks
  for pid in $(pgrep -f -- "-serial unix:$BENCH_DIR/serial-"); do
    ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || continue
    sum=$((sum + ticks))
  done
  echo "$sum"
}

# stop_burst_guests stops the QEMUs that bootwait -keep left running.
stop_burst_guests() {
  pkill -f -- "-serial unix:$BENCH_DIR/serial-" || true
}

main() {
  [[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { log "RUNS must be a positive number"; exit 2; }
  # systemd wants more room than busybox; 128 MiB is the kernel guest's size.
  if [[ -z "$MEMORY" ]]; then
    [[ "$GUEST" == kernelboot ]] && MEMORY=128 || MEMORY=256
  fi
  build_inputs
  rm -rf "$BENCH_DIR"
  mkdir -p "$BENCH_DIR"
  log "qemu: $(qemu_command "$BENCH_DIR/serial.sock" "$BENCH_DIR/overlay.qcow2" | tr '\n' ' ')"
  log "guest=$GUEST console=$CONSOLE nic=$NIC machine=$MACHINE memory=${MEMORY}MiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  if [[ -n "$BURST" ]]; then
    [[ "$BURST" =~ ^[1-9][0-9]*$ ]] || { log "BURST must be a positive number"; exit 2; }
    burst "$BURST"
    return
  fi
  local run
  for run in $(seq 1 "$RUNS"); do
    boot_once "$run"
  done
  log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize boot-to-banner 1
  summarize console-roundtrip 2
  summarize banner-to-shell-answer 3
}

main "$@"
