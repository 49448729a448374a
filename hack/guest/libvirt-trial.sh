#!/usr/bin/env bash
# libvirt-trial.sh [RUNS]: boots the kernelBoot test guest through libvirt,
# as Hangar's launcher will, and measures it. A reference for the launcher:
# the domain XML is hack/guest/libvirt/domain.xml, the daemon settings are
# hack/guest/libvirt/{libvirtd,qemu}.conf.
#
# What it does:
#   1. starts a private libvirtd (9.0, monolithic) in its own mount
#      namespace, where /etc/libvirt, /run/libvirt, /var/{lib,log,cache}/
#      libvirt are bind mounts of _output/guest/libvirt-trial/*: it cannot
#      meet another libvirtd on this machine, and the other way round;
#   2. RUNS times (default 5): define + start --paused a <domain
#      type='qemu'> with direct kernel boot, a unix-socket serial console
#      and VNC on a unix socket; dial the serial socket with bootwait,
#      resume, wait for HANGAR-GUEST-READY and check a typed command's
#      answer; check that the VNC socket greets with "RFB 003.008";
#      destroy + undefine;
#   3. stops every domain, QEMU and the libvirtd it started.
#
# Prints, for example:
#   libvirt define+start(paused): n=5 median=0.61s p95=0.74s ...
#   libvirt define+start->banner: n=5 median=2.72s p95=3.10s ...
#
# Settings (environment): MACHINE=q35, MEMORY=128 (MiB), TIMEOUT=120s.
set -euo pipefail

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$GUEST_DIR/../.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$REPO_ROOT/_output/guest}
KERNELBOOT_DIR=$OUTPUT_DIR/kernelboot
STATE_DIR=$OUTPUT_DIR/libvirt-trial
BOOTWAIT=$OUTPUT_DIR/bin/bootwait

RUNS=${1:-${RUNS:-5}}
MACHINE=${MACHINE:-q35}
MEMORY=${MEMORY:-128}
TIMEOUT=${TIMEOUT:-120s}
readonly PACKAGES=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients socat qemu-system-x86)
# The directories libvirtd (running as root) hard-codes, each replaced by a
# directory of the trial's own.
readonly LIBVIRT_DIRS=(etc:/etc/libvirt run:/run/libvirt lib:/var/lib/libvirt log:/var/log/libvirt cache:/var/cache/libvirt)

LIBVIRTD_PID=""
URI=""
DOMAINS=()

log() { echo "libvirt-trial: $*" >&2; }

now() { date +%s.%N; }
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

package_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

install_packages() {
  local missing=() package
  for package in "${PACKAGES[@]}"; do
    package_installed "$package" || missing+=("$package")
  done
  (( ${#missing[@]} )) || return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  # libvirt-daemon-system for the libvirt-qemu user: libvirtd 9.0 looks it
  # up as its default even when qemu.conf says root. Its init scripts are
  # not started (policy-rc.d here; no systemd); this script starts its own.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build_inputs() {
  "$GUEST_DIR/build-kernelboot.sh"
  mkdir -p "$(dirname "$BOOTWAIT")"
  (cd "$REPO_ROOT" && go build -o "$BOOTWAIT" ./hack/guest/bootwait)
}

virsh_() { virsh -q -c "$URI" "$@"; }

# start_libvirtd: in a private mount namespace (unshare -m), bind the
# trial's directories over libvirt's, then exec libvirtd. The socket ends up
# in $STATE_DIR/run, reachable from outside the namespace.
start_libvirtd() {
  local pair binds=""
  for pair in "${LIBVIRT_DIRS[@]}"; do
    mkdir -p "$STATE_DIR/${pair%%:*}"
    # mkdir: the mount point must exist (an empty directory on the host).
    binds+="mkdir -p ${pair#*:} && mount --bind $STATE_DIR/${pair%%:*} ${pair#*:} && "
  done
  cp "$GUEST_DIR/libvirt/libvirtd.conf" "$GUEST_DIR/libvirt/qemu.conf" "$STATE_DIR/etc/"
  rm -f "$STATE_DIR/run/libvirt-sock"
  local start
  start=$(now)
  unshare --mount --propagation private -- /bin/sh -c \
    "${binds}exec libvirtd --pid-file $STATE_DIR/run/libvirtd.pid" \
    > "$STATE_DIR/libvirtd.stdout" 2>&1 &
  LIBVIRTD_PID=$!
  URI="qemu:///system?socket=$STATE_DIR/run/libvirt-sock"
  local _
  for _ in $(seq 1 300); do
    [[ -S "$STATE_DIR/run/libvirt-sock" ]] && virsh_ version >/dev/null 2>&1 && break
    kill -0 "$LIBVIRTD_PID" 2>/dev/null || { cat "$STATE_DIR/libvirtd.stdout" >&2; log "libvirtd exited"; return 1; }
    sleep 0.1
  done
  log "libvirtd (pid $LIBVIRTD_PID) answers after $(seconds_between "$start" "$(now)")s"
  # The first domain start probes QEMU's capabilities (seconds under TCG);
  # do it here so that the measured starts do not include it. The result is
  # cached in $STATE_DIR/cache for the next trial.
  start=$(now)
  virsh_ domcapabilities --virttype qemu --machine "$MACHINE" >/dev/null
  log "QEMU capabilities ready after $(seconds_between "$start" "$(now)")s"
}

stop_libvirtd() {
  [[ -n "$LIBVIRTD_PID" ]] || return 0
  kill -TERM "$LIBVIRTD_PID" 2>/dev/null || true
  local _
  for _ in $(seq 1 50); do
    kill -0 "$LIBVIRTD_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$LIBVIRTD_PID" 2>/dev/null || true
  wait "$LIBVIRTD_PID" 2>/dev/null || true
  LIBVIRTD_PID=""
}

# stop_domain NAME: destroy and undefine; if QEMU survives, kill it by the
# pid libvirt recorded.
stop_domain() {
  local name=$1 pidfile=$STATE_DIR/run/qemu/$1.pid pid=""
  [[ -r "$pidfile" ]] && pid=$(cat "$pidfile")
  virsh_ destroy "$name" >/dev/null 2>&1 || true
  virsh_ undefine "$name" >/dev/null 2>&1 || true
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # QEMU leaves the VNC socket file behind.
  rm -f "$STATE_DIR/domains/$name".{serial,vnc}.sock
}

cleanup() {
  local name
  for name in "${DOMAINS[@]}"; do
    stop_domain "$name"
  done
  stop_libvirtd
}
trap cleanup EXIT

render_domain() {
  local name=$1 xml=$2
  sed -e "s|@NAME@|$name|g" \
      -e "s|@MEMORY_MIB@|$MEMORY|g" \
      -e "s|@MACHINE@|$MACHINE|g" \
      -e "s|@KERNEL@|$KERNELBOOT_DIR/vmlinux|g" \
      -e "s|@INITRD@|$KERNELBOOT_DIR/initramfs.cpio.gz|g" \
      -e "s|@CMDLINE@|console=ttyS0 quiet no_timer_check hostname=$name|g" \
      -e "s|@SERIAL_SOCKET@|$STATE_DIR/domains/$name.serial.sock|g" \
      -e "s|@VNC_SOCKET@|$STATE_DIR/domains/$name.vnc.sock|g" \
      "$GUEST_DIR/libvirt/domain.xml" > "$xml"
}

# check_vnc SOCKET: a VNC server speaks first, with its protocol version.
check_vnc() {
  local greeting
  greeting=$(timeout 5 socat -t 1 "UNIX-CONNECT:$1" STDOUT </dev/null 2>/dev/null | head -c 12 | tr -d '\n') || true
  [[ "$greeting" == "RFB 003.008" ]] || { log "VNC socket $1 greeted with '$greeting'"; return 1; }
}

# trial_once N: one measured boot, appending "start banner" seconds.
trial_once() {
  local run=$1 name=hangar-trial-$1
  local xml=$STATE_DIR/domains/$name.xml serial=$STATE_DIR/domains/$name.serial.sock
  mkdir -p "$STATE_DIR/domains"
  render_domain "$name" "$xml"
  DOMAINS+=("$name")

  local t0 t1 line
  t0=$(now)
  virsh_ define "$xml" >/dev/null
  virsh_ start --paused "$name" >/dev/null
  t1=$(now)
  # Console attached before the guest runs: nothing printed is lost.
  if ! line=$("$BOOTWAIT" -connect "$serial" -timeout "$TIMEOUT" -after-attach "virsh -q -c '$URI' resume $name" \
      -log "$STATE_DIR/domains/$name.console.log" 2>"$STATE_DIR/domains/$name.bootwait.log"); then
    log "run $run failed:"
    sed 's/^/  /' "$STATE_DIR/domains/$name.bootwait.log" >&2
    return 1
  fi
  local start_s banner_s roundtrip_s shell_s total_s
  start_s=$(seconds_between "$t0" "$t1")
  banner_s=$(sed -n 's/^banner=\([0-9.]*\)s.*/\1/p' <<<"$line")
  roundtrip_s=$(sed -n 's/.*roundtrip=\([0-9.]*\)s.*/\1/p' <<<"$line")
  shell_s=$(sed -n 's/.*shell=\([0-9.]*\)s.*/\1/p' <<<"$line")
  total_s=$(awk -v a="$start_s" -v b="$banner_s" 'BEGIN { printf "%.3f", a + b }')

  check_vnc "$STATE_DIR/domains/$name.vnc.sock"
  grep -aq "HANGAR-GUEST-READY hostname=$name" "$STATE_DIR/domains/$name.console.log" \
    || { log "banner without hostname=$name"; return 1; }
  log "run $run/$RUNS: define+start(paused)=${start_s}s attach+resume->banner=${banner_s}s total=${total_s}s roundtrip=${roundtrip_s}s shell=${shell_s}s vnc=RFB 003.008"
  echo "$start_s $total_s $roundtrip_s $shell_s" >> "$STATE_DIR/results.txt"

  stop_domain "$name"
  DOMAINS=("${DOMAINS[@]/$name}")
}

summarize() {
  local name=$1 column=$2
  awk -v c="$column" '{ print $c }' "$STATE_DIR/results.txt" | sort -g | awk -v name="$name" '
    { v[NR] = $1 }
    END {
      n = NR
      if (n % 2) median = v[(n + 1) / 2]; else median = (v[n / 2] + v[n / 2 + 1]) / 2
      rank = int(0.95 * n); if (rank < 0.95 * n) rank++
      printf "libvirt %s: n=%d median=%.2fs p95=%.2fs min=%.2fs max=%.2fs\n", name, n, median, v[rank], v[1], v[n]
    }'
}

main() {
  [[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { log "RUNS must be a positive number"; exit 2; }
  install_packages
  build_inputs
  mkdir -p "$STATE_DIR"
  rm -rf "$STATE_DIR/domains" "$STATE_DIR/results.txt"
  start_libvirtd
  log "machine=$MACHINE memory=${MEMORY}MiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  local run
  for run in $(seq 1 "$RUNS"); do
    trial_once "$run"
  done
  log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize "define+start(paused)" 1
  summarize "define+start->banner" 2
  summarize "console-roundtrip" 3
  summarize "banner-to-shell-answer" 4
}

main "$@"
