#!/usr/bin/env bash
# install-browser.sh: Debian's chromium, which the browser tests drive headless over the Chrome
# DevTools Protocol from Go (github.com/chromedp/chromedp; test/browser): the page's RFB client
# (pkg/virtctl/vncweb), and virtctl's VNC page against a real QEMU (test/node) and on the
# cluster (test/e2e). A test-only package: the test scripts install it (hack/test.sh,
# hack/test-node.sh, hack/bench/vnc.sh); building, hack/local-up.sh and the node side never
# need it. Installs only what is missing; apt-get update runs only then. ~60 s on a new
# machine of the project's kind.
set -euo pipefail

installed() { [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]; }

if installed chromium; then
  echo "install-browser: chromium present" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-browser: chromium is missing; install Debian's chromium (as root: hack/install-browser.sh)" >&2
  exit 1
fi
echo "install-browser: installing chromium" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
