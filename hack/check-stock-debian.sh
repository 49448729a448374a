#!/usr/bin/env bash
# check-stock-debian.sh: runs the build and test stages of the README's commands on a stock
# Debian 12: a fresh debootstrap chroot of bookworm (minbase, from the mirror apt uses here,
# hack/guest/apt-mirror.sh) with only what the README asks for (Go and kubectl, copied from this machine;
# gcc; git and ca-certificates, which a clone and the module proxy need) and a fresh clone of
# this checkout's HEAD. Inside it runs, as hack/test.sh does and timed:
#   hack/install-node-deps.sh, hack/install-browser.sh, hack/install-prometheus.sh,
#   hack/install-codegen-deps.sh, go build ./..., go vet (every tag), hack/verify-codegen.sh,
#   go test ./... (unit, in-process integration, browser and promtool tests;
#   HANGAR_REQUIRE_BROWSER=1, HANGAR_REQUIRE_PROMTOOL=1),
#   and with --kubernetes also hack/cluster/build.sh (Kubernetes and containerd from source);
# then checks that no node or npm is on the chroot's PATH. A missing package that a script does
# not install fails a stage here, as it would on a new machine. The cluster stages cannot run
# in a chroot (kubelet, containerd and the CNI need their own mounts, cgroups and network
# namespaces): docs/development.md says what was run and what was not.
#
# The Go module cache is this machine's, bind-mounted (modules are checksummed; downloading
# them again proves nothing about Debian's packages); the build cache is the chroot's own,
# empty, so every cgo package is compiled against the chroot's headers.
#
# Usage (root): hack/check-stock-debian.sh [--kubernetes] [--keep]; the chroot is
# ${HANGAR_STOCK_ROOT:-/var/tmp/hangar-stock-debian}, made anew each run and removed after
# unless --keep.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHROOT=${HANGAR_STOCK_ROOT:-/var/tmp/hangar-stock-debian}
KUBERNETES=false
KEEP=false
for arg in "$@"; do
  case ${arg} in
  --kubernetes) KUBERNETES=true ;;
  --keep) KEEP=true ;;
  *) echo "usage: $0 [--kubernetes] [--keep]" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "check-stock-debian: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }

log() { echo "[stock-debian] $*" >&2; }

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount -l "${MOUNTS[i]}" 2>/dev/null || true
  done
  if [[ ${KEEP} == false && -d ${CHROOT} ]]; then
    rm -rf --one-file-system "${CHROOT}"
  fi
}
trap cleanup EXIT

bind() { # bind SOURCE TARGET-INSIDE-CHROOT
  mkdir -p "${CHROOT}$2"
  mount --bind "$1" "${CHROOT}$2"
  MOUNTS+=("${CHROOT}$2")
}

start=${SECONDS}
if [[ -d ${CHROOT} ]]; then
  rm -rf --one-file-system "${CHROOT}"
fi
mirror=$(hack/guest/apt-mirror.sh bookworm)
log "debootstrap bookworm (minbase + gcc, libc6-dev, git, ca-certificates) from ${mirror}"
t=${SECONDS}
debootstrap --variant=minbase --include=gcc,libc6-dev,git,ca-certificates bookworm "${CHROOT}" "${mirror}" >/dev/null
log "debootstrap: $((SECONDS - t)) s"

# Package scripts must not start services in the chroot.
printf '#!/bin/sh\nexit 101\n' >"${CHROOT}/usr/sbin/policy-rc.d"
chmod 755 "${CHROOT}/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "${CHROOT}/etc/resolv.conf"
# The certificate authorities this machine's administrator added (a network's TLS proxy on the
# way to the module proxy, for instance), as a new machine on the same network would have them.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "${CHROOT}/usr/local/share/ca-certificates/"
  chroot "${CHROOT}" update-ca-certificates >/dev/null
fi
mkdir -p "${CHROOT}/usr/local"
cp -a "$(go env GOROOT)" "${CHROOT}/usr/local/go"
# kubectl, the README's third prerequisite (the integration tests drive it), copied too.
cp "$(command -v kubectl)" "${CHROOT}/usr/local/bin/kubectl"
git clone -q --no-local "${ROOT}" "${CHROOT}/src/hangar"
git -C "${CHROOT}/src/hangar" checkout -q "$(git -C "${ROOT}" rev-parse HEAD)"

for fs in proc sys dev dev/pts; do
  bind "/${fs}" "/${fs}"
done
mkdir -p "${CHROOT}/dev/shm"
mount -t tmpfs -o size=2g tmpfs "${CHROOT}/dev/shm"
MOUNTS+=("${CHROOT}/dev/shm")
bind "$(go env GOMODCACHE)" /root/go/pkg/mod

# in_chroot runs a command in the clone inside the chroot, with a clean environment.
in_chroot() {
  chroot "${CHROOT}" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/go/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOPROXY="$(go env GOPROXY)" GOFLAGS=-buildvcs=false GOTOOLCHAIN=local HANGAR_REQUIRE_BROWSER=1 HANGAR_REQUIRE_PROMTOOL=1 \
    bash -c "cd /src/hangar && $*"
}

step() { # step NAME COMMAND...
  local name=$1 t=${SECONDS}
  shift
  log "${name} ..."
  if ! in_chroot "$@"; then
    log "${name}: FAILED after $((SECONDS - t)) s"
    exit 1
  fi
  log "${name}: $((SECONDS - t)) s"
}

in_chroot 'go version; . /etc/os-release; echo "$PRETTY_NAME"; command -v node npm nodejs || echo "no node, nodejs or npm"'
step "node packages (hack/install-node-deps.sh)" hack/install-node-deps.sh
step "browser (hack/install-browser.sh)" hack/install-browser.sh
step "prometheus (hack/install-prometheus.sh)" hack/install-prometheus.sh
step "codegen packages (hack/install-codegen-deps.sh)" hack/install-codegen-deps.sh
step "go build ./..." go build ./...
step "go vet, every tag" go vet -tags kube,e2e,bench,libvirt,cluster,install ./...
step "hack/verify-codegen.sh" hack/verify-codegen.sh
step "go test ./... (unit, integration, browser, promtool)" go test -count=1 ./...
if [[ ${KUBERNETES} == true ]]; then
  step "hack/cluster/build.sh (Kubernetes, containerd)" hack/cluster/build.sh
fi
in_chroot '! command -v node && ! command -v nodejs && ! command -v npm' ||
  { log "node or npm appeared in the chroot"; exit 1; }
log "no node, nodejs or npm was installed"
log "all steps passed ($((SECONDS - start)) s)"
