#!/usr/bin/env bash
# Deploys Hangar onto the local cluster (hack/cluster/up.sh) from artifacts/overlays/local:
# builds the component images and imports them into the node's containerd, makes virt-api's
# serving certificate, etcd's certificates (mutual TLS), virt-api's encryption key, the etcd
# volume, applies the manifests, fills in the caBundle of the APIServices and of the eviction
# webhook and waits until the APIServices are Available. Idempotent: certificates and the encryption key are made once
# and kept under _cluster/hangar/pki.
#
# On a real cluster, do what this script does by hand or with cert-manager: a Secret
# hangar/virt-api-tls for the DNS name virt-api.hangar.svc, the APIServices' caBundle set to
# its CA, etcd's certificates, the encryption configuration, and images pushed to your
# registry (kustomize edit set image). See artifacts/overlays/production/README.md.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"
source "${REPO_ROOT}/hack/cluster/pki.sh"

HANGAR_DIR="${CLUSTER_DIR}/hangar"
PKI_DIR="${HANGAR_DIR}/pki"
IMAGE_BIN_DIR="${REPO_ROOT}/_output/images"
# virt-api's EncryptionConfiguration with its key: made once, never replaced (objects written
# with a key cannot be read without it).
ENCRYPTION_CONFIG="${PKI_DIR}/encryption-config.yaml"
# The ClusterIP of the hangar-etcd Service (etcd_service_address).
ETCD_SERVICE_IP=""
# etcd in the pod runs as this user; its hostPath volume must be writable by it.
ETCD_UID=65532

# build_static NAME DIR PACKAGE builds a static binary for an image with no libc.
build_static() {
	local name="$1" dir="$2" pkg="$3"
	CGO_ENABLED=0 go -C "${dir}" build -o "${IMAGE_BIN_DIR}/${name}" "${pkg}"
}

# The kernelBoot guest of the demo VM and the end-to-end tests (hack/guest/build-kernelboot.sh).
DEMO_GUEST_IMAGE=hangar.local/kernelboot-guest:dev
# The UEFI containerDisk of the end-to-end tests (hack/guest/build-uefi.sh).
UEFI_GUEST_IMAGE=hangar.local/uefi-guest:dev
# The node images keep the tag dev; a changed handler image restarts the DaemonSet.
HANDLER_IMAGE_CHANGED=false

# Images are tagged with their content's hash, so a changed binary rolls its pods and an
# unchanged one leaves them alone. IMAGE_TAGS maps the overlay's image to the built one.
declare -A IMAGE_TAGS

# build_binary_image NAME: an image of one static binary, /usr/bin/NAME, as entrypoint.
build_binary_image() {
	local name="$1" tag
	tag="$(sha256sum "${IMAGE_BIN_DIR}/${name}" | cut -c1-12)"
	"${REPO_ROOT}/hack/cluster/image.sh" "hangar.local/${name}:${tag}" \
		-file "${IMAGE_BIN_DIR}/${name}:/usr/bin/${name}" -entrypoint "/usr/bin/${name}"
	IMAGE_TAGS["hangar.local/${name}"]="hangar.local/${name}:${tag}"
}

build_images() {
	mkdir -p "${IMAGE_BIN_DIR}"
	build_static virt-api "${REPO_ROOT}" ./cmd/virt-api
	build_static etcd "${REPO_ROOT}/hack/tools" ./cmd/etcd
	build_static virt-controller "${REPO_ROOT}" ./cmd/virt-controller
	build_binary_image virt-api
	build_binary_image etcd
	build_binary_image virt-controller
	# The node images (launcher and handler, cgo against Debian's libvirt) and the demo guest.
	"${REPO_ROOT}/hack/install-node-deps.sh"
	local before
	before="$(image_digest hangar.local/virt-handler:dev)"
	"${REPO_ROOT}/hack/build-node-images.sh" dev
	[[ "$(image_digest hangar.local/virt-handler:dev)" == "${before}" ]] || HANDLER_IMAGE_CHANGED=true
	"${REPO_ROOT}/hack/guest/build-kernelboot.sh"
	"${REPO_ROOT}/hack/cluster/image.sh" "${DEMO_GUEST_IMAGE}" -dir "${REPO_ROOT}/_output/guest/kernelboot-rootfs"
	"${REPO_ROOT}/hack/guest/build-uefi.sh"
	"${REPO_ROOT}/hack/cluster/image.sh" "${UEFI_GUEST_IMAGE}" -dir "${REPO_ROOT}/_output/guest/uefi-rootfs"
}

# image_digest prints the digest an image's tarball had when it was last imported into the
# nodes (hack/cluster/image.sh keeps one stamp per node; they agree), or nothing.
image_digest() {
	local tarball="${CLUSTER_DIR}/images/$(tr '/:' '__' <<<"$1").tar"
	# No stamp yet (a new cluster): nothing, not a failure.
	cat "${tarball}".imported.* 2>/dev/null | head -n1 || true
}

# rendered_manifests prints the local overlay with the images just built.
rendered_manifests() {
	local manifests image
	manifests="$(kubectl_admin kustomize "${REPO_ROOT}/artifacts/overlays/local")"
	for image in "${!IMAGE_TAGS[@]}"; do
		manifests="$(sed -E "s|image: ${image}:[^[:space:]]+|image: ${IMAGE_TAGS[${image}]}|" <<<"${manifests}")"
	done
	printf '%s\n' "${manifests}"
}

# etcd_service_address creates the namespace and etcd's Services (the objects of the
# overlay labelled hangar-etcd that are not its pods) and reads the client Service's
# ClusterIP: virt-api dials etcd there (no cluster DNS here), so etcd's serving certificate
# must name it, and a Service's address is known only once it exists.
etcd_service_address() {
	kubectl_admin apply -f "${REPO_ROOT}/artifacts/base/namespace.yaml" >/dev/null
	rendered_manifests | kubectl_admin apply --server-side --force-conflicts \
		--selector app.kubernetes.io/name=hangar-etcd -f - >/dev/null
	ETCD_SERVICE_IP="$(kubectl_admin -n hangar get service hangar-etcd -o jsonpath='{.spec.clusterIP}')"
	[[ -n ${ETCD_SERVICE_IP} ]] || die "the Service hangar/hangar-etcd has no ClusterIP"
}

# cert_names_ip CERT IP: whether the certificate's subjectAltName holds the address.
cert_names_ip() {
	openssl x509 -in "${PKI_DIR}/$1.crt" -noout -ext subjectAltName 2>/dev/null | grep -qwF "IP Address:$2"
}

make_certificates() {
	mkdir -p "${PKI_DIR}"
	chmod 700 "${PKI_DIR}"
	new_ca hangar-ca "hangar-ca"
	new_cert virt-api hangar-ca "/CN=virt-api.hangar.svc" serverAuth \
		"DNS:virt-api.hangar.svc,DNS:virt-api.hangar.svc.cluster.local,DNS:virt-api.hangar,DNS:virt-api"
	# virt-api reaches handlers by pod IP and checks the name virt-handler; handlers admit the
	# client certificate named virt-api.
	new_cert virt-handler hangar-ca "/CN=virt-handler" serverAuth "DNS:virt-handler"
	new_cert virt-api-handler-client hangar-ca "/CN=virt-api" clientAuth
	# The nodes' migration identities: virt-controller holds this CA's key and signs each
	# node's request (certificates.k8s.io, signer hangarvm.io/migration).
	new_ca hangar-migration-ca "hangar-migration-ca"

	# etcd: CAs of their own, so that no other certificate of the cluster opens etcd. One
	# for the client port (its serving certificate and virt-api's client certificate), one
	# for the peer port, so that a client certificate is no member's.
	new_ca hangar-etcd-ca "hangar-etcd-ca"
	new_ca hangar-etcd-peer-ca "hangar-etcd-peer-ca"
	# A recreated Service has another address: issue the serving certificate again.
	if [[ -f ${PKI_DIR}/hangar-etcd-server.crt ]] && ! cert_names_ip hangar-etcd-server "${ETCD_SERVICE_IP}"; then
		rm -f "${PKI_DIR}/hangar-etcd-server.crt"
	fi
	local member=hangar-etcd-0.hangar-etcd-peers.hangar.svc
	new_cert hangar-etcd-server hangar-etcd-ca "/CN=hangar-etcd" serverAuth \
		"DNS:hangar-etcd,DNS:hangar-etcd.hangar,DNS:hangar-etcd.hangar.svc,DNS:hangar-etcd.hangar.svc.cluster.local,DNS:${member},DNS:${member}.cluster.local,DNS:localhost,IP:${ETCD_SERVICE_IP},IP:127.0.0.1"
	# A member serves and dials the peer port with the same certificate.
	new_cert hangar-etcd-peer hangar-etcd-peer-ca "/CN=hangar-etcd-peer" serverAuth,clientAuth \
		"DNS:${member},DNS:${member}.cluster.local"
	# No subjectAltName: etcd checks a client certificate's SANs against the address the
	# connection comes from.
	new_cert virt-api-etcd-client hangar-etcd-ca "/CN=virt-api" clientAuth
}

# make_encryption_config writes virt-api's EncryptionConfiguration with a random key, once.
# A key this directory lost but the cluster still holds is taken back from the Secret.
make_encryption_config() {
	if [[ ! -s ${ENCRYPTION_CONFIG} ]]; then
		local existing
		existing="$(kubectl_admin -n hangar get secret virt-api-encryption \
			-o jsonpath='{.data.encryption-config\.yaml}' 2>/dev/null || true)"
		[[ -n ${existing} ]] && (umask 077 && base64 -d <<<"${existing}" >"${ENCRYPTION_CONFIG}")
	fi
	if [[ -s ${ENCRYPTION_CONFIG} ]]; then
		# A configuration made before migrations were served lacks them, and virt-api refuses
		# to store a resource in plaintext: add the resource, keeping the key.
		if ! grep -q 'virtualmachineinstancemigrations.kubevirt.io' "${ENCRYPTION_CONFIG}"; then
			sed -i 's/^\(\s*\)- virtualmachineinstancereplicasets.kubevirt.io$/&\n\1- virtualmachineinstancemigrations.kubevirt.io/' "${ENCRYPTION_CONFIG}"
		fi
		return 0
	fi
	local key
	key="$(head -c 32 /dev/urandom | base64 -w0)"
	(
		umask 077
		cat >"${ENCRYPTION_CONFIG}.tmp" <<YAML
# virt-api's encryption at rest (k8s.io/apiserver --encryption-provider-config). Resources
# of an API group are named resource.group; identity reads objects written before encryption.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources:
  - virtualmachines.kubevirt.io
  - virtualmachineinstances.kubevirt.io
  - virtualmachineinstancereplicasets.kubevirt.io
  - virtualmachineinstancemigrations.kubevirt.io
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: ${key}
  - identity: {}
YAML
	)
	mv -f "${ENCRYPTION_CONFIG}.tmp" "${ENCRYPTION_CONFIG}"
}

# apply_tls_secret NAME CERT [CA]: a Secret with tls.crt, tls.key and the CA (hangar-ca unless
# given) as ca.crt.
apply_tls_secret() {
	local name="$1" cert="$2" ca="${3:-hangar-ca}"
	kubectl_admin -n hangar create secret generic "${name}" --type=kubernetes.io/tls \
		--from-file=tls.crt="${PKI_DIR}/${cert}.crt" --from-file=tls.key="${PKI_DIR}/${cert}.key" \
		--from-file=ca.crt="${PKI_DIR}/${ca}.crt" \
		--dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null
}

# apply_prerequisites creates what the manifests refer to but do not contain.
apply_prerequisites() {
	apply_tls_secret virt-api-tls virt-api
	apply_tls_secret virt-handler-tls virt-handler
	apply_tls_secret virt-api-handler-client virt-api-handler-client
	apply_tls_secret hangar-migration-ca hangar-migration-ca hangar-migration-ca
	kubectl_admin -n hangar create secret generic hangar-migration-ca-bundle \
		--from-file=ca.crt="${PKI_DIR}/hangar-migration-ca.crt" \
		--dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null
	apply_tls_secret hangar-etcd-server hangar-etcd-server hangar-etcd-ca
	apply_tls_secret hangar-etcd-peer hangar-etcd-peer hangar-etcd-peer-ca
	apply_tls_secret virt-api-etcd-client virt-api-etcd-client hangar-etcd-ca
	kubectl_admin -n hangar create secret generic virt-api-encryption \
		--from-file=encryption-config.yaml="${ENCRYPTION_CONFIG}" \
		--dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null

	local volume="${HANGAR_DIR}/volumes/etcd-0"
	mkdir -p "${volume}"
	chown "${ETCD_UID}:${ETCD_UID}" "${volume}"
	chmod 700 "${volume}"
	kubectl_admin apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: hangar-local
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: hangar-etcd-0
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: hangar-local
  claimRef:
    namespace: hangar
    name: data-hangar-etcd-0
  hostPath:
    path: ${volume}
    type: Directory
YAML
	# The StatefulSet's claim, made here and bound before its pod exists: left to the
	# StatefulSet, the PV controller (the PV names its claim) and the scheduler (the class
	# waits for a consumer) both bind it, and the loser's conflict sends the pod back to the
	# scheduler's queue. Made after the volume: a claim the PV controller sees before its
	# volume waits for the controller's next resync (15 s).
	kubectl_admin apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  namespace: hangar
  name: data-hangar-etcd-0
  labels:
    app.kubernetes.io/name: hangar-etcd
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: hangar-local
  volumeName: hangar-etcd-0
  resources:
    requests:
      storage: 1Gi
YAML
	kubectl_admin -n hangar wait --for=jsonpath='{.status.phase}'=Bound --timeout=60s \
		persistentvolumeclaim/data-hangar-etcd-0 >/dev/null
}

apply_manifests() {
	rendered_manifests | kubectl_admin apply --server-side --force-conflicts -f - >/dev/null
	local ca_bundle
	ca_bundle="$(base64 -w0 <"${PKI_DIR}/hangar-ca.crt")"
	local apiservice
	for apiservice in v1.kubevirt.io v1alpha3.kubevirt.io v1.subresources.kubevirt.io; do
		kubectl_admin patch apiservice "${apiservice}" --type=merge \
			-p "{\"spec\":{\"caBundle\":\"${ca_bundle}\"}}" >/dev/null
	done
	kubectl_admin patch validatingwebhookconfiguration virt-api-validator --type=json \
		-p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"${ca_bundle}\"}]" >/dev/null
}

# report_state prints, when Hangar does not come up, what tells why: its pods, the newest
# events of its namespace, the log tails of the containers that are not ready (and of the
# run before, if one restarted) and the APIServices' conditions.
report_state() {
	log "--- pods in hangar"
	kubectl_admin -n hangar get pods -o wide >&2 || true
	log "--- newest events in hangar"
	kubectl_admin -n hangar get events --sort-by=.lastTimestamp 2>&1 | tail -n 40 >&2 || true
	local pod ready restarts
	while read -r pod ready restarts; do
		[[ ${ready} == *false* || ${ready} == none || ${restarts} != 0 ]] || continue
		log "--- ${pod} (ready: ${ready}, restarts: ${restarts})"
		kubectl_admin -n hangar logs "${pod}" --all-containers --tail=25 >&2 || true
		if [[ ${restarts} != 0 ]]; then
			log "--- ${pod}, the run before"
			kubectl_admin -n hangar logs "${pod}" --all-containers --previous --tail=25 >&2 || true
		fi
	done < <(kubectl_admin -n hangar get pods -o \
		jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[*].ready}{" "}{.status.containerStatuses[*].restartCount}{"\n"}{end}' |
		awk '{ready=""; restarts=0; for (i = 2; i <= NF; i++) if ($i ~ /^(true|false)$/) ready = ready (ready ? "," : "") $i; else restarts += $i; print $1, (ready ? ready : "none"), restarts}')
	log "--- APIServices"
	kubectl_admin get apiservice v1.kubevirt.io v1alpha3.kubevirt.io v1.subresources.kubevirt.io \
		-o jsonpath='{range .items[*]}{.metadata.name}{": "}{.status.conditions[*].reason}{" "}{.status.conditions[*].message}{"\n"}{end}' >&2 || true
}

# await DESCRIPTION COMMAND...: runs a kubectl wait; when it times out, says for what and
# prints the state that tells why.
await() {
	local what="$1"
	shift
	"$@" >/dev/null && return 0
	log ""
	log "[deploy] timed out waiting for ${what}"
	report_state
	return 1
}

wait_ready() {
	await "etcd" kubectl_admin -n hangar rollout status statefulset/hangar-etcd --timeout=180s
	await "virt-api" kubectl_admin -n hangar rollout status deployment/virt-api --timeout=180s
	await "virt-controller" kubectl_admin -n hangar rollout status deployment/virt-controller --timeout=180s
	if [[ ${HANDLER_IMAGE_CHANGED} == true ]]; then
		kubectl_admin -n hangar rollout restart daemonset/virt-handler >/dev/null
	fi
	await "virt-handler" kubectl_admin -n hangar rollout status daemonset/virt-handler --timeout=180s
	await "the APIServices" kubectl_admin wait --for=condition=Available --timeout=120s \
		apiservice/v1.kubevirt.io apiservice/v1alpha3.kubevirt.io apiservice/v1.subresources.kubevirt.io
}

main() {
	require_root
	local start=${SECONDS}
	kubectl_admin get --raw /readyz >/dev/null 2>&1 || die "the local cluster is not running: hack/cluster/up.sh"
	run_step deploy "images" build_images
	run_step deploy "etcd address" etcd_service_address
	run_step deploy "certificates" make_certificates
	run_step deploy "encryption key" make_encryption_config
	run_step deploy "prerequisites" apply_prerequisites
	run_step deploy "manifests" apply_manifests
	run_step deploy "ready" wait_ready
	log "[deploy] Hangar is deployed ($((SECONDS - start))s): kubectl --kubeconfig ${ADMIN_KUBECONFIG} get vms -A"
}

main "$@"
