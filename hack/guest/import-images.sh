#!/usr/bin/env bash
# Builds the test guests' images (this directory's scripts) and imports them into every node
# of the local cluster: the kernelBoot guest of the demo VM and the end-to-end tests, the UEFI
# containerDisk, and, with --all, the Debian containerDisk some end-to-end tests boot from
# claims. They are test data, not Hangar: Hangar's own images come from its release, through
# the cluster's registry (hack/install-local.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

guest="${REPO_ROOT}/_output/guest"
"${REPO_ROOT}/hack/guest/build-kernelboot.sh"
"${REPO_ROOT}/hack/guest/build-uefi.sh"
# The kernelBoot guest with qemu-guest-agent too (initrdPath /boot/initramfs-agent.cpio.gz): the
# UEFI guest's agent archive after the busybox one, which the kernel unpacks both of; a fast
# guest for what needs the agent (a snapshot's freeze).
cat "${guest}/kernelboot/initramfs.cpio.gz" "${guest}/uefi/agent.cpio.gz" >"${guest}/kernelboot-rootfs/boot/initramfs-agent.cpio.gz"
"${REPO_ROOT}/hack/cluster/image.sh" hangar.local/kernelboot-guest:dev -dir "${guest}/kernelboot-rootfs"
"${REPO_ROOT}/hack/cluster/image.sh" hangar.local/uefi-guest:dev -dir "${REPO_ROOT}/_output/guest/uefi-rootfs"
if [[ ${1:-} == --all ]]; then
	"${REPO_ROOT}/hack/guest/build-containerdisk.sh" >/dev/null
	"${REPO_ROOT}/hack/cluster/image.sh" hangar.local/containerdisk-guest:dev -dir "${REPO_ROOT}/_output/guest/containerdisk-rootfs"
fi
