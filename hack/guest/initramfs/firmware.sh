# shellcheck shell=dash
# (busybox ash and dash both have "local")
# report_firmware: what the UEFI test guest (build-uefi.sh) says of its firmware and TPM on
# the serial console, one marker line each, before the ready banner. It does nothing on a
# guest without EFI (the kernelBoot guest boots PVH).
#
#   HANGAR-GUEST-EFI secureboot=1|0 var=<value|none>
#       secureboot: the firmware's SecureBoot variable, as mokutil --sb-state reads it;
#       var: what a previous boot stored in the EFI variable HangarTest (then this boot
#       stores "persisted" there), so a test sees whether the VM's EFI variables persist.
#   HANGAR-GUEST-TPM random=ok|<response> nv=<value|none>
#       random: TPM2_GetRandom answered with success; nv: what a previous boot wrote to the
#       owner NV index 0x01500000 (then this boot defines it and writes HANGARNV), so a
#       test sees whether the TPM's state persists. The commands are raw TPM 2.0 byte
#       strings (password session, empty owner auth), as busybox has no TPM tools.
#   HANGAR-GUEST-TPM none       when there is no /dev/tpm0.

readonly EFI_GLOBAL=8be4df61-93ca-11d2-aa0d-00e098032b8c
readonly HANGAR_VAR=HangarTest-5c2d6f4e-8b1a-4f6e-9d3c-0a1b2c3d4e5f
readonly NV_INDEX=01500000
# TPM_RS_PW with an empty nonce, no attributes and an empty password.
readonly PW_SESSION=00000009400000090000000000

# tpm_call HEX: sends one TPM command, prints the response as hex.
tpm_call() {
  local fmt
  fmt=$(echo "$1" | sed 's/../\\x&/g')
  exec 3<>/dev/tpm0
  # shellcheck disable=SC2059
  printf "$fmt" >&3
  dd bs=4096 count=1 <&3 2>/dev/null | od -An -tx1 | tr -d ' \n'
  exec 3>&-
}

# tpm_rc RESPONSE: the response code (bytes 6-9) as 8 hex digits.
tpm_rc() { echo "$1" | cut -c13-20; }

report_tpm() {
  if [ ! -c /dev/tpm0 ]; then
    announce "HANGAR-GUEST-TPM none"
    return 0
  fi
  local resp random nv
  resp=$(tpm_call 80010000000c0000017b0008)
  if [ "$(tpm_rc "$resp")" = 00000000 ]; then random=ok; else random=$resp; fi
  # NV_Read 8 bytes at offset 0 of the index, with owner authorization.
  resp=$(tpm_call "8002000000230000014e40000001${NV_INDEX}${PW_SESSION}00080000")
  if [ "$(tpm_rc "$resp")" = 00000000 ]; then
    # header (10) + parameter size (4) + TPM2B size (2): the data from byte 16.
    nv=$(echo "$resp" | cut -c33-48 | sed 's/../\\x&/g')
    # shellcheck disable=SC2059
    nv=$(printf "$nv")
  else
    nv=none
    # NV_DefineSpace: 8 bytes, owner read and write, SHA-256 name; then NV_Write HANGARNV.
    tpm_call "80020000002d0000012a40000001${PW_SESSION}0000000e${NV_INDEX}000b0002000200000008" >/dev/null
    tpm_call "80020000002b0000013740000001${NV_INDEX}${PW_SESSION}000848414e4741524e560000" >/dev/null
  fi
  announce "HANGAR-GUEST-TPM random=$random nv=$nv"
}

report_efi() {
  local vars=/sys/firmware/efi/efivars sb var
  load_modules efi
  mount -t efivarfs efivarfs "$vars" 2>/dev/null
  # SecureBoot: 4 bytes of attributes, then one byte, 1 when enforcing.
  sb=$(tail -c 1 "$vars/SecureBoot-$EFI_GLOBAL" 2>/dev/null | od -An -tu1 | tr -d ' ')
  var=$(tail -c +5 "$vars/$HANGAR_VAR" 2>/dev/null)
  if [ -z "$var" ]; then
    var=none
    # Non-volatile, boot and run time; efivarfs takes the attributes and data in one write.
    printf '\x07\x00\x00\x00persisted' > "$vars/$HANGAR_VAR"
  fi
  announce "HANGAR-GUEST-EFI secureboot=${sb:-unknown} var=$var"
}

report_firmware() {
  [ -d /sys/firmware/efi ] || return 0
  report_efi
  report_tpm
}
