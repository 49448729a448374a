#!/usr/bin/env bash
# Smoke check of a running local cluster (hack/cluster/up.sh): a busybox pod
# from the locally built image starts, gets an IP on the CNI bridge, serves
# HTTP through a ClusterIP Service that kube-proxy makes reachable from the
# host, answers kubectl exec and logs (API server -> kubelet), and reaches the
# API server through the kubernetes Service. Also checks that the API server
# publishes the request-header settings that aggregated APIs rely on.
# Prints the time each stage took; cleans up after itself.
#
# Usage: hack/cluster/smoke.sh
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAMESPACE=hangar-smoke

elapsed_ms() {
	echo $(($(date +%s%3N) - $1))
}

require_cluster() {
	local name
	for name in "${DAEMONS[@]}"; do
		daemon_running "${name}" || die "${name} is not running; run hack/cluster/up.sh first"
	done
}

default_service_account_exists() {
	kubectl_admin -n "${NAMESPACE}" get serviceaccount default
}

create_namespace() {
	kubectl_admin delete namespace "${NAMESPACE}" --ignore-not-found --wait=true --timeout=90s >/dev/null
	kubectl_admin create namespace "${NAMESPACE}" >/dev/null
	# Pods are rejected until the service-account controller made "default".
	wait_until 30 "default service account" default_service_account_exists
}

create_pod_and_service() {
	kubectl_admin -n "${NAMESPACE}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: ${BUSYBOX_IMAGE}
    imagePullPolicy: Never
    command: [sh, -c, 'mkdir -p /www && echo hangar-smoke-ok >/www/index.html && echo serving && exec httpd -f -v -p 8080 -h /www']
    ports: [{containerPort: 8080}]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOF
}

create_pod_and_wait_ready() {
	create_pod_and_service
	wait_until 60 "pod web Ready" pod_ready
}

exec_and_logs_work() {
	[[ "$(kubectl_admin -n "${NAMESPACE}" exec web -- cat /www/index.html)" == hangar-smoke-ok ]]
	[[ "$(kubectl_admin -n "${NAMESPACE}" logs web)" == *serving* ]]
}

pod_ready() {
	[[ "$(kubectl_admin -n "${NAMESPACE}" get pod web \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

service_answers() {
	[[ "$(curl -fsS --max-time 2 "http://$1/")" == hangar-smoke-ok ]]
}

# ip_in_pod_cidr checks a /24 (or wider, octet-aligned) pod CIDR by prefix.
ip_in_pod_cidr() {
	local ip="$1" network="${POD_CIDR%/*}" bits="${POD_CIDR#*/}"
	local octets=$((bits / 8))
	[[ "$(cut -d. -f1-"${octets}" <<<"${ip}")" == "$(cut -d. -f1-"${octets}" <<<"${network}")" ]]
}

# Debian's static busybox wget crashes on TLS, so speak plain HTTP to the TLS
# port: Go's TLS server answers that with a recognisable 400.
pod_reaches_apiserver() {
	local answer
	answer="$(kubectl_admin -n "${NAMESPACE}" exec web -- \
		sh -c "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${KUBERNETES_SERVICE_IP} 443")"
	[[ ${answer} == *"Client sent an HTTP request to an HTTPS server"* ]]
}

delete_namespace() {
	kubectl_admin delete namespace "${NAMESPACE}" --wait=true --timeout=90s >/dev/null
}

check_aggregation_settings() {
	local cm
	cm="$(kubectl_admin -n kube-system get configmap extension-apiserver-authentication -o json)"
	local key
	for key in requestheader-client-ca-file requestheader-allowed-names requestheader-username-headers \
		requestheader-group-headers requestheader-extra-headers-prefix; do
		grep -q "\"${key}\"" <<<"${cm}" || die "extension-apiserver-authentication lacks ${key}"
	done
}

main() {
	require_root
	require_cluster
	local t total
	total=$(date +%s%3N)

	run_step smoke "namespace ${NAMESPACE}" create_namespace

	t=$(date +%s%3N)
	run_step smoke "pod web (${BUSYBOX_IMAGE}) Ready" create_pod_and_wait_ready
	local pod_ms
	pod_ms=$(elapsed_ms "${t}")

	local pod_ip
	pod_ip="$(kubectl_admin -n "${NAMESPACE}" get pod web -o jsonpath='{.status.podIP}')"
	ip_in_pod_cidr "${pod_ip}" || die "pod IP ${pod_ip} is not in ${POD_CIDR}"
	run_step smoke "pod IP ${pod_ip} on ${BRIDGE} answers" wait_until 10 "pod HTTP" service_answers "${pod_ip}:8080"

	local cluster_ip
	cluster_ip="$(kubectl_admin -n "${NAMESPACE}" get service web -o jsonpath='{.spec.clusterIP}')"
	t=$(date +%s%3N)
	run_step smoke "service ${cluster_ip}:80 via kube-proxy from the host" \
		wait_until 60 "service through kube-proxy" service_answers "${cluster_ip}:80"
	local service_ms
	service_ms=$(elapsed_ms "${t}")

	run_step smoke "kubectl exec and logs (API server -> kubelet)" exec_and_logs_work
	run_step smoke "pod -> API server via kubernetes service ${KUBERNETES_SERVICE_IP}:443" pod_reaches_apiserver
	run_step smoke "aggregation request-header settings published" check_aggregation_settings

	t=$(date +%s%3N)
	run_step smoke "cleanup" delete_namespace
	local cleanup_ms
	cleanup_ms=$(elapsed_ms "${t}")

	log "[smoke] OK: pod create->Ready ${pod_ms} ms, service reachable ${service_ms} ms after Ready," \
		"namespace deletion ${cleanup_ms} ms, total $(elapsed_ms "${total}") ms"
}

main "$@"
