#!/usr/bin/env bash
# vmlinux-from-bzimage.sh BZIMAGE OUTPUT
#
# Writes the uncompressed kernel (an ELF "vmlinux") that is packed inside an
# XZ-compressed x86 bzImage, such as Debian's vmlinuz-* (debian-kernel.sh).
#
# Why: QEMU boots an ELF vmlinux through its PVH entry point directly, which
# skips the kernel's self-decompression. Under TCG that decompression is the
# slowest part of a boot (about 5-6 s with the bzImage, 2 s with vmlinux).
#
# How: the x86 boot protocol (2.08+) records where the compressed payload
# sits (payload_offset, relative to the protected-mode code that follows the
# setup sectors). We read that first; if the header is missing or does not
# point at an XZ stream, we fall back to scanning for the XZ stream magic
# and take the first candidate that decompresses into an ELF file.
set -euo pipefail

readonly XZ_MAGIC_HEX='fd377a585a00'   # "\xfd7zXZ\0", the XZ stream header
readonly ELF_MAGIC_HEX='7f454c46'      # "\x7fELF"
TMP_OUTPUT=""

usage() {
  echo "usage: $0 BZIMAGE OUTPUT" >&2
  exit 2
}

# read_le FILE OFFSET SIZE: little-endian unsigned integer at OFFSET.
read_le() {
  local file=$1 offset=$2 size=$3
  od -An -t "u${size}" -j "$offset" -N "$size" --endian=little "$file" | tr -d ' \n'
}

# hex_at FILE OFFSET COUNT: COUNT bytes at OFFSET as lowercase hex.
hex_at() {
  local file=$1 offset=$2 count=$3
  od -An -t x1 -j "$offset" -N "$count" "$file" | tr -d ' \n'
}

# payload_offset_from_header FILE: absolute offset of the compressed payload
# according to the boot protocol header, or nothing if the file has none.
payload_offset_from_header() {
  local file=$1
  # "HdrS" at 0x202 marks a boot protocol header.
  [[ "$(hex_at "$file" $((0x202)) 4)" == "48647253" ]] || return 0
  local version setup_sects payload_offset
  version=$(read_le "$file" $((0x206)) 2)
  (( version >= 0x0208 )) || return 0
  setup_sects=$(read_le "$file" $((0x1f1)) 1)
  # A zero here means 4, for compatibility with ancient boot loaders.
  (( setup_sects != 0 )) || setup_sects=4
  payload_offset=$(read_le "$file" $((0x248)) 4)
  echo $(( (setup_sects + 1) * 512 + payload_offset ))
}

# xz_magic_offsets FILE: every offset where an XZ stream header occurs.
xz_magic_offsets() {
  local file=$1
  LC_ALL=C grep -obUaP '\xfd\x37\x7a\x58\x5a\x00' "$file" | cut -d: -f1 || true
}

# try_decompress FILE OFFSET OUTPUT: decompress one XZ stream that starts at
# OFFSET; succeed only if the result is an ELF file. --single-stream makes xz
# stop at the end of the stream and ignore what follows (the bzImage appends
# the uncompressed size and more code after the payload).
try_decompress() {
  local file=$1 offset=$2 output=$3
  [[ "$(hex_at "$file" "$offset" 6)" == "$XZ_MAGIC_HEX" ]] || return 1
  # xz stops reading at the end of the stream, so tail may die of SIGPIPE:
  # only xz's status tells whether the stream decoded.
  local statuses
  tail -c "+$((offset + 1))" "$file" | xz -dc --single-stream > "$output" 2>/dev/null \
    && statuses=("${PIPESTATUS[@]}") || statuses=("${PIPESTATUS[@]}")
  (( statuses[1] == 0 )) || return 1
  [[ "$(hex_at "$output" 0 4)" == "$ELF_MAGIC_HEX" ]]
}

main() {
  [[ $# -eq 2 ]] || usage
  local bzimage=$1 output=$2
  [[ -r "$bzimage" ]] || { echo "cannot read $bzimage" >&2; exit 1; }

  TMP_OUTPUT="$output.tmp.$$"
  trap 'rm -f "$TMP_OUTPUT"' EXIT

  local candidates offset
  candidates="$(payload_offset_from_header "$bzimage") $(xz_magic_offsets "$bzimage")"
  for offset in $candidates; do
    if try_decompress "$bzimage" "$offset" "$TMP_OUTPUT"; then
      mv "$TMP_OUTPUT" "$output"
      echo "extracted ELF kernel from offset $offset of $bzimage" >&2
      return 0
    fi
  done
  echo "no XZ-compressed ELF kernel found in $bzimage" >&2
  exit 1
}

main "$@"
