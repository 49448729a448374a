# shellcheck shell=bash
# openssl helpers for the certificates hack/deploy.sh makes (Hangar's own CAs; the cluster's
# PKI is hangar-cluster's). Sourced after lib.sh; PKI_DIR names the directory. Every file is
# created only when missing, so a redeploy keeps its identities.
#
# Keys are ECDSA P-256: generating them takes milliseconds, and every
# component (including service-account token signing, ES256) accepts them.

CERT_DAYS=3650

new_key() {
	local key="$1"
	[[ -f ${key} ]] && return 0
	(umask 077 && openssl ecparam -name prime256v1 -genkey -noout -out "${key}")
}

# new_ca NAME CN
new_ca() {
	local name="$1" cn="$2"
	[[ -f ${PKI_DIR}/${name}.crt ]] && return 0
	new_key "${PKI_DIR}/${name}.key"
	openssl req -x509 -new -key "${PKI_DIR}/${name}.key" -subj "/CN=${cn}" -days "${CERT_DAYS}" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,digitalSignature,keyCertSign,cRLSign" \
		-out "${PKI_DIR}/${name}.crt" 2>/dev/null
}

# new_cert NAME CA SUBJECT USAGE [SAN]
#   USAGE is clientAuth, serverAuth or "serverAuth,clientAuth";
#   SAN is an openssl subjectAltName value, e.g. "DNS:x,IP:1.2.3.4".
new_cert() {
	local name="$1" ca="$2" subject="$3" usage="$4" san="${5:-}"
	[[ -f ${PKI_DIR}/${name}.crt ]] && return 0
	new_key "${PKI_DIR}/${name}.key"
	local ext
	ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=${usage}"
	if [[ -n ${san} ]]; then
		ext+=$'\n'"subjectAltName=${san}"
	fi
	openssl req -new -key "${PKI_DIR}/${name}.key" -subj "${subject}" 2>/dev/null |
		openssl x509 -req -CA "${PKI_DIR}/${ca}.crt" -CAkey "${PKI_DIR}/${ca}.key" \
			-set_serial "0x$(openssl rand -hex 16)" -days "${CERT_DAYS}" \
			-extfile <(printf '%s\n' "${ext}") -out "${PKI_DIR}/${name}.crt" 2>/dev/null
}
