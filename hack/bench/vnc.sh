#!/usr/bin/env bash
# Prints the bytes a guest's VNC display costs the browser page (virtctl vnc --browser): the
# page's RFB client (pkg/virtctl/vncweb/static/rfb.js, in Debian's Chromium) against a real QEMU
# showing the test guest's 1024×768 text console, asking for ZRLE (the page now) and for raw
# (the page before it): the first full screen, and BENCH_SECONDS (default 60) of a console
# scrolling the kernel's log. Every byte goes through kube-apiserver and virt-api on its way
# to the browser. Needs root as the node tests do; run it under the host lock. A benchmark,
# not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "${ROOT}"
[[ $(id -u) == 0 ]] || { echo "bench/vnc.sh: needs root (as the node tests)" >&2; exit 1; }
hack/install-node-deps.sh
hack/install-browser.sh
hack/guest/build-kernelboot.sh >/dev/null
HANGAR_BENCH_VNC_SECONDS=${BENCH_SECONDS:-60} go test -v -tags libvirt -count=1 -timeout 10m \
  -run '^TestVNCBytesFigures$' ./test/node/ | grep '^vnc bytes'
