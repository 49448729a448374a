#!/usr/bin/env bash
# install-prometheus.sh: Debian's prometheus (the server and promtool) for the monitoring
# end-to-end test and hack/bench/metrics.sh, which run it as a plain process against the local
# cluster. The package's service is not started: policy-rc.d refuses it (one is put in place
# for the install if the machine has none), and there is no systemd here anyway.
# Installs only what is missing; apt-get update runs only then.
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  echo "install-prometheus: present ($(prometheus --version 2>&1 | head -1))" >&2
  exit 0
fi
policy=/usr/sbin/policy-rc.d
placed=false
if [[ ! -e ${policy} ]]; then
  printf '#!/bin/sh\nexit 101\n' >"${policy}"
  chmod 755 "${policy}"
  placed=true
fi
trap '[[ ${placed} == true ]] && rm -f "${policy}"' EXIT
echo "install-prometheus: installing prometheus" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
prometheus --version 2>&1 | head -1 >&2
