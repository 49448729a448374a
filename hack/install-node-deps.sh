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
# No browser and no Node.js: the browser tests' Chromium is a test-only package
# (hack/install-browser.sh, run by the test scripts).
# Installs only what is missing; apt-get update runs only then.
set -euo pipefail

readonly PACKAGES=(gcc pkg-config libvirt-dev libvirt-daemon-system libvirt-daemon-driver-qemu
  libvirt-clients qemu-system-x86 qemu-utils ovmf swtpm swtpm-tools genisoimage iproute2 nftables socat)

installed() { [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
if (( ${#missing[@]} == 0 )); then
  echo "install-node-deps: all packages present" >&2
else
  echo "install-node-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  # policy-rc.d keeps package scripts from starting libvirtd; there is no systemd here anyway.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
