#!/usr/bin/env bash
# install-node-deps.sh: the Debian packages the node side (virt-launcher,
# virt-handler and their tests) needs on a build or test machine:
#   - gcc, pkg-config, libvirt-dev: libvirt.org/go/libvirt is cgo;
#   - libvirt-daemon-system, libvirt-daemon-driver-qemu, libvirt-clients,
#     qemu-system-x86, qemu-utils: the private libvirtd the launcher starts,
#     QEMU, and qemu-img for containerDisk overlays (libvirt-daemon-system for
#     the libvirt-qemu user that libvirtd 9.0 looks up even when it runs QEMU
#     as root; its init scripts are not started);
#   - ovmf, swtpm, swtpm-tools: EFI guests' firmware (with Secure Boot) and their
#     emulated TPM, which libvirt starts as the launcher's user;
#   - genisoimage (isoinfo): reads back the cloud-init ISO in tagged tests;
#   - nftables: the nft that knftables runs for the masquerade and bridge rules; iproute2:
#     the node tests build pod stand-ins with ip netns;
#   - socat: debugging consoles by hand;
#   - nodejs: runs the browser VNC page's RFB client against QEMU in a node test; npm
#     (only where the machine's Node.js brings none) and chromium: the browser tests drive
#     Debian's Chromium with playwright-core, which npm installs, as pinned by
#     test/browser/package-lock.json, into _output/browser/node_modules (never committed).
#     playwright-core needs Node.js >= 20: the project's machines have it (Debian 12's own
#     nodejs is 18, on which playwright refuses to run), and this script says so rather than
#     leaving the browser tests to fail later.
# Installs only what is missing; apt-get update runs only then. On a new machine of the
# project's kind, chromium and the npm packages add ~90 s to the rest (~150 s).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly PACKAGES=(gcc pkg-config libvirt-dev libvirt-daemon-system libvirt-daemon-driver-qemu
  libvirt-clients qemu-system-x86 qemu-utils ovmf swtpm swtpm-tools genisoimage iproute2 nftables socat nodejs chromium)

# browser_deps installs the pinned npm packages of the browser tests, unless the same lock
# is installed already.
browser_deps() {
  local dir=$ROOT/_output/browser major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if (( major < 20 )); then
    echo "install-node-deps: the browser tests' playwright-core needs Node.js >= 20; node is $(node --version)" >&2
    exit 1
  fi
  if cmp -s "$ROOT/test/browser/package-lock.json" "$dir/package-lock.json" && [[ -d $dir/node_modules ]]; then
    return 0
  fi
  echo "install-node-deps: npm ci in $dir" >&2
  mkdir -p "$dir"
  cp "$ROOT/test/browser/package.json" "$ROOT/test/browser/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
}

installed() { [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if (( ${#missing[@]} == 0 )); then
  echo "install-node-deps: all packages present" >&2
else
  echo "install-node-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  # policy-rc.d keeps package scripts from starting libvirtd; there is no systemd here anyway.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
browser_deps
