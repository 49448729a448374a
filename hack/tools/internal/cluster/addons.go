package cluster

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"text/template"
	"time"
)

// Versions of the add-ons, built from the Go module proxy by hack/cluster/build.sh.
const (
	CoreDNSVersion   = "v1.14.6"
	LocalPathVersion = "v0.0.30"
)

// Storage classes: local-path (the default; rancher's provisioner: a directory on the node,
// Filesystem claims) and hangar-block (loop-provisioner: a loop device on the node, Block
// claims; local-path provisions no block volumes).
const (
	LocalPathClass   = "local-path"
	BlockClass       = "hangar-block"
	BlockProvisioner = "hangar.local/loop-block"
)

// Addons starts the cluster's add-ons: CoreDNS, the local-path provisioner and the loop
// block provisioner, and waits until they serve; with HANGAR_CLUSTER_SNAPSHOTS=1 the snapshot
// add-on too.
func (s *Settings) Addons() error {
	if err := Step("up", "images coredns, local-path-provisioner", func() error {
		for _, img := range []struct{ ref, bin string }{
			{s.CoreDNSImage, "coredns"},
			{s.LocalPathImage, "local-path-provisioner"},
		} {
			tar := s.ImageTarball(img.ref)
			if newer(s.Bin(img.bin), tar) {
				if err := s.BuildImage(img.ref, "-file", s.Bin(img.bin)+":/usr/bin/"+img.bin, "-entrypoint", "/usr/bin/"+img.bin); err != nil {
					return err
				}
			}
			if err := s.ImportImage(img.ref, tar); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := Step("up", "add-ons applied", func() error { return s.kubectlApply(s.addonManifests()) }); err != nil {
		return err
	}
	d := s.loopProvisioner()
	if err := Step("up", d.Name, func() error { return s.Start(d) }); err != nil {
		return err
	}
	if err := Step("up", "cluster DNS and local-path ready", func() error {
		return WaitFor(120*time.Second, "add-ons", func() error {
			for _, dep := range []string{"kube-system/coredns", "local-path-storage/local-path-provisioner"} {
				ns, name, _ := strings.Cut(dep, "/")
				out, err := s.kubectl("-n", ns, "get", "deployment", name, "-o", "jsonpath={.status.availableReplicas}")
				if err != nil {
					return err
				}
				if out == "" || out == "0" {
					return fmt.Errorf("%s not available", dep)
				}
			}
			return nil
		})
	}); err != nil {
		return err
	}
	if s.Snapshots {
		return s.SnapshotAddon()
	}
	return nil
}

func (s *Settings) loopProvisioner() Daemon {
	return s.hostDaemon("loop-provisioner",
		"-kubeconfig", s.AdminKubeconfig(),
		"-provisioner", BlockProvisioner,
		"-dir", s.NodesDir(),
	)
}

// stopAddons stops the add-ons that run on the host (the others go with their nodes).
func (s *Settings) stopAddons() {
	d := s.loopProvisioner()
	_, _ = s.Stop(d.Name, d.Binary, 5*time.Second)
}

func (s *Settings) kubectl(args ...string) (string, error) {
	return output(s.Bin("kubectl"), append([]string{"--kubeconfig", s.AdminKubeconfig()}, args...)...)
}

func (s *Settings) kubectlApply(manifests string) error {
	cmd := exec.Command(s.Bin("kubectl"), "--kubeconfig", s.AdminKubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, out.String())
	}
	return nil
}

func (s *Settings) addonManifests() string {
	var b bytes.Buffer
	if err := addonTemplate.Execute(&b, map[string]any{
		"DNSServiceIP":   s.DNSServiceIP,
		"ClusterDomain":  s.ClusterDomain,
		"CoreDNSImage":   s.CoreDNSImage,
		"LocalPathImage": s.LocalPathImage,
		"BusyboxImage":   s.BusyboxImage,
		"LocalPathDir":   LocalPathDir,
		"LocalPathClass": LocalPathClass,
		"BlockClass":     BlockClass,
		"Provisioner":    BlockProvisioner,
		"Replicas":       min(s.Nodes, 2),
	}); err != nil {
		panic(err) // the template is ours
	}
	return b.String()
}

// addonTemplate: CoreDNS serves the cluster domain from the API and forwards the rest to the
// host's resolver; it listens on 1053 (no privilege needed; the Service maps 53 to it). The
// local-path provisioner makes a directory per claim on the claim's node, through a helper pod
// of the busybox image, in the node's own directory (LocalPathDir in its mount namespace).
var addonTemplate = template.Must(template.New("addons").Parse(`
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "hangar:coredns"}
rules:
- apiGroups: [""]
  resources: [services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "hangar:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "hangar:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes {{.ClusterDomain}} in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        forward . /etc/resolv.conf
        cache 30
        reload
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: {{.Replicas}}
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {k8s-app: kube-dns}}}
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: coredns
        image: {{.CoreDNSImage}}
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}, initialDelaySeconds: 10}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: {{.DNSServiceIP}}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
---
apiVersion: v1
kind: Namespace
metadata: {name: local-path-storage}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: local-path-provisioner, namespace: local-path-storage}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: local-path-provisioner, namespace: local-path-storage}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, patch, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local-path-provisioner, namespace: local-path-storage}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: local-path-provisioner}
subjects: [{kind: ServiceAccount, name: local-path-provisioner, namespace: local-path-storage}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "hangar:local-path-provisioner"}
rules:
- apiGroups: [""]
  resources: [nodes, persistentvolumeclaims, configmaps, pods, pods/log]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "hangar:local-path-provisioner"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "hangar:local-path-provisioner"}
subjects: [{kind: ServiceAccount, name: local-path-provisioner, namespace: local-path-storage}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: local-path-storage}
data:
  config.json: |
    {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["{{.LocalPathDir}}"]}]}
  setup: |
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "$VOL_DIR"
  teardown: |
    #!/bin/sh
    set -eu
    rm -rf "$VOL_DIR"
  helperPod.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: helper-pod}
    spec:
      priorityClassName: system-node-critical
      tolerations: [{key: node.kubernetes.io/disk-pressure, operator: Exists, effect: NoSchedule}]
      containers:
      - name: helper-pod
        image: {{.BusyboxImage}}
        imagePullPolicy: IfNotPresent
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: local-path-provisioner, namespace: local-path-storage}
spec:
  replicas: 1
  selector: {matchLabels: {app: local-path-provisioner}}
  template:
    metadata: {labels: {app: local-path-provisioner}}
    spec:
      serviceAccountName: local-path-provisioner
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: local-path-provisioner
        image: {{.LocalPathImage}}
        imagePullPolicy: Never
        command: [/usr/bin/local-path-provisioner, start, --config, /etc/config/config.json,
          --service-account-name, local-path-provisioner, --helper-image, {{.BusyboxImage}}]
        env:
        - name: POD_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        - {name: CONFIG_MOUNT_PATH, value: /etc/config/}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: config, mountPath: /etc/config/}]
      volumes: [{name: config, configMap: {name: local-path-config}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: {{.LocalPathClass}}
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: {{.BlockClass}}}
provisioner: {{.Provisioner}}
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
`))
