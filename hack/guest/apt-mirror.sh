#!/usr/bin/env bash
# apt-mirror.sh [SUITE]: prints the Debian mirror URL that apt on this
# machine uses for SUITE (default: this system's codename), read from
# /etc/apt/sources.list and /etc/apt/sources.list.d/*.{list,sources}.
#
# Why: debootstrap must fetch from the same mirror apt does (the only one
# reachable here, and the one CI has), and no host name may be hard-coded
# in the repository.
set -euo pipefail

readonly APT_DIR=${APT_DIR:-/etc/apt}

system_codename() {
  . /etc/os-release
  echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}"
}

# mirror_from_deb822 SUITE FILE...: first URI of an enabled "deb" stanza
# listing SUITE and the main component.
mirror_from_deb822() {
  local suite=$1
  shift
  awk -v suite="$suite" '
    function finish() {
      if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ") \
          && (" " components " ") ~ / main / && uri != "") { print uri; found = 1; exit }
      types = suites = components = uri = ""; enabled = "yes"
    }
    BEGIN { enabled = "yes" }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { finish(); next }
    {
      key = tolower($1); sub(/:$/, "", key)
      value = $0; sub(/^[^:]*:[ \t]*/, "", value)
      if (key == "types") types = value
      else if (key == "suites") suites = value
      else if (key == "components") components = value
      else if (key == "enabled") enabled = tolower(value)
      else if (key == "uris") { split(value, uris, /[ \t]+/); uri = uris[1] }
    }
    END { if (!found) finish() }
  ' "$@" 2>/dev/null | head -n1
}

# mirror_from_one_line SUITE FILE...: "deb [options] URI SUITE main ..." lines.
mirror_from_one_line() {
  local suite=$1
  shift
  sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$@" 2>/dev/null \
    | awk -v suite="$suite" '$1 == "deb" && $3 == suite { for (i = 4; i <= NF; i++) if ($i == "main") { print $2; exit } }' \
    | head -n1
}

main() {
  local suite=${1:-$(system_codename)} mirror="" files=()
  shopt -s nullglob
  files=("$APT_DIR"/sources.list.d/*.sources)
  (( ${#files[@]} )) && mirror=$(mirror_from_deb822 "$suite" "${files[@]}")
  if [[ -z "$mirror" ]]; then
    files=("$APT_DIR"/sources.list "$APT_DIR"/sources.list.d/*.list)
    mirror=$(mirror_from_one_line "$suite" "${files[@]}")
  fi
  if [[ -z "$mirror" ]]; then
    echo "apt-mirror: no apt source for suite $suite with component main" >&2
    exit 1
  fi
  echo "${mirror%/}"
}

main "$@"
