# shellcheck shell=bash
# PKI and kubeconfigs for the local cluster, made with openssl. Sourced by
# up.sh after lib.sh. Every file is created only when missing, so restarting
# the cluster keeps its identities (and the tokens signed with them).
#
# Keys are ECDSA P-256: generating them takes milliseconds, and every
# component (including service-account token signing, ES256) accepts them.

CERT_DAYS=3650

# The settings baked into certificates; if they change, the old serving
# certificates would silently lack the new addresses.
pki_params() {
	printf 'node=%s ip=%s service-ip=%s\n' "${NODE_NAME}" "${NODE_IP}" "${KUBERNETES_SERVICE_IP}"
}

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

generate_pki() {
	mkdir -p "${PKI_DIR}"
	chmod 700 "${PKI_DIR}"
	if [[ -f ${PKI_DIR}/params ]]; then
		[[ "$(<"${PKI_DIR}/params")" == "$(pki_params)" ]] ||
			die "cluster settings changed since the PKI was made ($(<"${PKI_DIR}/params")); run hack/cluster/down.sh --purge first"
	fi

	new_ca ca "hangar-cluster-ca"
	# The aggregation layer authenticates to extension API servers with a
	# client certificate from a CA of its own, which those servers trust only
	# for the request-header identity (never for ordinary clients).
	new_ca front-proxy-ca "hangar-front-proxy-ca"

	new_cert apiserver ca "/CN=kube-apiserver" serverAuth \
		"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:${NODE_IP},IP:${KUBERNETES_SERVICE_IP},IP:127.0.0.1"
	new_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	new_cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
	new_cert admin ca "/O=system:masters/CN=hangar-admin" clientAuth
	new_cert controller-manager ca "/CN=system:kube-controller-manager" clientAuth
	new_cert scheduler ca "/CN=system:kube-scheduler" clientAuth
	new_cert kube-proxy ca "/CN=system:kube-proxy" clientAuth
	new_cert kubelet-client ca "/O=system:nodes/CN=system:node:${NODE_NAME}" clientAuth
	# Signed by the cluster CA so the API server can verify the kubelet
	# (--kubelet-certificate-authority) for logs, exec and port-forward.
	new_cert kubelet-serving ca "/O=system:nodes/CN=system:node:${NODE_NAME}" serverAuth \
		"DNS:${NODE_NAME},IP:${NODE_IP}"

	if [[ ! -f ${PKI_DIR}/sa.pub ]]; then
		new_key "${PKI_DIR}/sa.key"
		openssl ec -in "${PKI_DIR}/sa.key" -pubout -out "${PKI_DIR}/sa.pub" 2>/dev/null
	fi
	pki_params >"${PKI_DIR}/params"
}

# write_kubeconfig FILE CERT_NAME: a self-contained kubeconfig (certificates
# embedded) for the client certificate CERT_NAME.
write_kubeconfig() {
	local file="$1" cert="$2"
	local tmp="${file}.tmp"
	(
		umask 077
		cat >"${tmp}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hangar
  cluster:
    server: https://${NODE_IP}:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 "${PKI_DIR}/ca.crt")
users:
- name: ${cert}
  user:
    client-certificate-data: $(base64 -w0 "${PKI_DIR}/${cert}.crt")
    client-key-data: $(base64 -w0 "${PKI_DIR}/${cert}.key")
contexts:
- name: hangar
  context:
    cluster: hangar
    user: ${cert}
current-context: hangar
EOF
	)
	mv -f "${tmp}" "${file}"
}

write_kubeconfigs() {
	mkdir -p "${CONFIG_DIR}"
	write_kubeconfig "${ADMIN_KUBECONFIG}" admin
	write_kubeconfig "${CONFIG_DIR}/controller-manager.kubeconfig" controller-manager
	write_kubeconfig "${CONFIG_DIR}/scheduler.kubeconfig" scheduler
	write_kubeconfig "${CONFIG_DIR}/kubelet.kubeconfig" kubelet-client
	write_kubeconfig "${CONFIG_DIR}/kube-proxy.kubeconfig" kube-proxy
}
