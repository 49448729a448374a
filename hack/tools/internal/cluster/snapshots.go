package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"
)

// The snapshot add-on (HANGAR_CLUSTER_SNAPSHOTS=1): Kubernetes' snapshot machinery for real,
// on the project's own CSI driver. Versions are those hack/cluster/build.sh builds.
const (
	SnapshotterModule  = "github.com/kubernetes-csi/external-snapshotter/v8"
	SnapshotterVersion = "v8.7.0"
	// SnapshotClientModule holds the VolumeSnapshot CRDs of the same release.
	SnapshotClientModule = "github.com/kubernetes-csi/external-snapshotter/client/v8"
	ProvisionerVersion   = "v5.3.0"

	// CSIDriverName is hangar-local-csi's (hack/tools/internal/localcsi.DriverName).
	CSIDriverName = "local.csi.hangar.dev"
	// SnapshotClass is the StorageClass of the driver, and the name of its default
	// VolumeSnapshotClass.
	SnapshotClass = "hangar-snapshot"
	// CSINamespace holds the snapshot controller and the driver's sidecars.
	CSINamespace = "hangar-csi"
	// CSIDriverCapacity is how much a node's volumes may add up to (bookkeeping: the driver
	// does not enforce sizes on what pods write).
	CSIDriverCapacity = "100Gi"
)

// snapshotImages are the add-on's images: binary → image.
func (s *Settings) snapshotImages() map[string]string {
	return map[string]string{
		"snapshot-controller": "hangar.local/snapshot-controller:" + SnapshotterVersion,
		"csi-snapshotter":     "hangar.local/csi-snapshotter:" + SnapshotterVersion,
		"csi-provisioner":     "hangar.local/csi-provisioner:" + ProvisionerVersion,
	}
}

// csiDriverDaemon is hangar-local-csi on node n: a process in the node's namespaces (its bind
// mounts must land in the node's mount namespace, where the kubelet and containerd see them),
// keeping the node's volumes in the node's directory.
func (s *Settings) csiDriverDaemon(n *Node) Daemon {
	return s.nodeDaemon(n, "hangar-local-csi", s.Bin("hangar-local-csi"),
		"-node", n.Name,
		"-data-dir", n.CSIDataDir(),
		"-capacity", CSIDriverCapacity,
		"-v=1")
}

// CSIDataDir keeps the node's CSI volumes and snapshots.
func (n *Node) CSIDataDir() string { return filepath.Join(n.Dir(), "csi") }

// csiSocket is the driver's socket as the host sees it (/var/lib/kubelet/plugins/... in the
// node's mount namespace).
func (n *Node) csiSocket() string {
	return filepath.Join(n.Dir(), "kubelet", "plugins", CSIDriverName, "csi.sock")
}

// SnapshotAddon installs the snapshot add-on: the VolumeSnapshot CRDs of external-snapshotter's
// client module, the snapshot controller, hangar-local-csi on every node with the
// csi-provisioner and csi-snapshotter sidecars beside it (a DaemonSet, node-deployment mode:
// each node's sidecars serve the volumes of their node), the CSIDriver, the StorageClass and
// the default VolumeSnapshotClass; and waits until they serve.
func (s *Settings) SnapshotAddon() error {
	for _, bin := range []string{"hangar-local-csi", "snapshot-controller", "csi-snapshotter", "csi-provisioner"} {
		if !exists(s.Bin(bin)) {
			return fmt.Errorf("%s is missing: run HANGAR_CLUSTER_SNAPSHOTS=1 hack/cluster/build.sh", s.Bin(bin))
		}
	}
	if err := Step("up", "images snapshot-controller, csi-snapshotter, csi-provisioner", func() error {
		for bin, ref := range s.snapshotImages() {
			tar := s.ImageTarball(ref)
			if newer(s.Bin(bin), tar) {
				if err := s.BuildImage(ref, "-file", s.Bin(bin)+":/usr/bin/"+bin, "-entrypoint", "/usr/bin/"+bin); err != nil {
					return err
				}
			}
			if err := s.ImportImage(ref, tar); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := Step("up", "VolumeSnapshot CRDs "+SnapshotterVersion, s.applySnapshotCRDs); err != nil {
		return err
	}
	for _, n := range s.AllNodes() {
		d := s.csiDriverDaemon(n)
		if err := Step("up", d.Name, func() error {
			if err := s.Start(d); err != nil {
				return err
			}
			return WaitFor(30*time.Second, d.Name+" socket", func() error {
				_, err := os.Stat(n.csiSocket())
				return err
			})
		}); err != nil {
			return err
		}
	}
	if err := Step("up", "snapshot add-on applied", func() error { return s.kubectlApply(s.snapshotManifests()) }); err != nil {
		return err
	}
	return Step("up", "snapshot controller and CSI driver ready", func() error {
		return WaitFor(120*time.Second, "snapshot add-on", s.snapshotAddonReady)
	})
}

// applySnapshotCRDs applies the CRDs the client module of the release ships (config/crd), read
// from the Go module cache, and waits until they are established.
func (s *Settings) applySnapshotCRDs() error {
	dir, err := moduleDir(SnapshotClientModule + "@" + SnapshotterVersion)
	if err != nil {
		return err
	}
	docs, names, err := snapshotCRDs(dir)
	if err != nil {
		return err
	}
	if err := s.kubectlApply(docs); err != nil {
		return err
	}
	_, err = s.kubectl(append([]string{"wait", "--for", "condition=Established", "--timeout", "60s"}, names...)...)
	return err
}

// snapshotCRDs reads the CRDs of the client module in dir: the manifests, and their names as
// kubectl wants them (crd/volumesnapshots.snapshot.storage.k8s.io), from the files' names
// (GROUP_PLURAL.yaml).
func snapshotCRDs(dir string) (string, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "*.storage.k8s.io_*.yaml"))
	if err != nil {
		return "", nil, err
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("no CRDs in %s/config/crd", dir)
	}
	sort.Strings(files)
	var all bytes.Buffer
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", nil, err
		}
		all.WriteString("\n---\n")
		all.Write(b)
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		names = append(names, "crd/"+plural+"."+group)
	}
	return all.String(), names, nil
}

// moduleDir is where the Go module cache holds MODULE@VERSION (downloaded if it is not there:
// build.sh has fetched it with the sidecars).
func moduleDir(spec string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", spec)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", spec, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", spec, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", spec, m.Error)
	}
	return m.Dir, nil
}

// snapshotAddonReady: the snapshot controller available, the sidecars ready on every node, and
// every node's kubelet has registered the driver (its CSINode lists it).
func (s *Settings) snapshotAddonReady() error {
	out, err := s.kubectl("-n", CSINamespace, "get", "deployment", "snapshot-controller", "-o", "jsonpath={.status.availableReplicas}")
	if err != nil {
		return err
	}
	if out == "" || out == "0" {
		return fmt.Errorf("snapshot-controller not available")
	}
	out, err = s.kubectl("-n", CSINamespace, "get", "daemonset", "hangar-local-csi", "-o", "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}")
	if err != nil {
		return err
	}
	if ready, want, _ := strings.Cut(out, "/"); ready != want || want == "" || want == "0" {
		return fmt.Errorf("hangar-local-csi sidecars ready on %s nodes", out)
	}
	for _, n := range s.AllNodes() {
		drivers, err := s.kubectl("get", "csinode", n.Name, "-o", "jsonpath={.spec.drivers[*].name}")
		if err != nil {
			return err
		}
		if !containsWord(drivers, CSIDriverName) {
			return fmt.Errorf("the kubelet of %s has not registered %s", n.Name, CSIDriverName)
		}
	}
	return nil
}

// stopCSIDriver stops a node's driver (down: before the nodes' mount namespaces go).
func (s *Settings) stopCSIDriver(n *Node) (bool, error) {
	d := s.csiDriverDaemon(n)
	return s.Stop(d.Name, d.Binary, 5*time.Second)
}

func (s *Settings) snapshotManifests() string {
	images := s.snapshotImages()
	var b bytes.Buffer
	if err := snapshotTemplate.Execute(&b, map[string]any{
		"Namespace":          CSINamespace,
		"Driver":             CSIDriverName,
		"Class":              SnapshotClass,
		"ControllerImage":    images["snapshot-controller"],
		"SnapshotterImage":   images["csi-snapshotter"],
		"ProvisionerImage":   images["csi-provisioner"],
		"SocketDir":          "/var/lib/kubelet/plugins/" + CSIDriverName,
		"SnapshotterVersion": SnapshotterVersion,
	}); err != nil {
		panic(err) // the template is ours
	}
	return b.String()
}

// snapshotTemplate: RBAC as the releases' deploy/kubernetes manifests grant it (the snapshot
// controller also lists nodes: distributed snapshotting labels each content with its volume's
// node). The sidecars run as root without capabilities: the driver's socket is root's. They
// find the driver's socket in the node's kubelet directory (hostPath resolves in the node's
// mount namespace, where the driver runs).
var snapshotTemplate = template.Must(template.New("snapshots").Parse(`
apiVersion: v1
kind: Namespace
metadata: {name: {{.Namespace}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: snapshot-controller, namespace: {{.Namespace}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "hangar:snapshot-controller"}
rules:
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, update]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [list, watch, create, update, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents]
  verbs: [create, get, list, watch, update, delete, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents/status]
  verbs: [patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshots]
  verbs: [create, get, list, watch, update, patch, delete]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshots/status]
  verbs: [update, patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotcontents]
  verbs: [create, get, list, watch, update, delete, patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotcontents/status]
  verbs: [patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshots]
  verbs: [get, list, watch, update, patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshots/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "hangar:snapshot-controller"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "hangar:snapshot-controller"}
subjects: [{kind: ServiceAccount, name: snapshot-controller, namespace: {{.Namespace}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: snapshot-controller, namespace: {{.Namespace}}}
spec:
  replicas: 1
  selector: {matchLabels: {app: snapshot-controller}}
  template:
    metadata: {labels: {app: snapshot-controller}}
    spec:
      serviceAccountName: snapshot-controller
      priorityClassName: system-cluster-critical
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: snapshot-controller
        image: {{.ControllerImage}}
        imagePullPolicy: Never
        args: [--v=2, --leader-election=false, --enable-distributed-snapshotting=true]
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 256Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: hangar-local-csi, namespace: {{.Namespace}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "hangar:local-csi"}
rules:
# csi-provisioner
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, update]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses, csinodes, volumeattachments]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [list, watch, create, update, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshots]
  verbs: [get, list]
# csi-provisioner (restores: the snapshot's content) and csi-snapshotter
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents]
  verbs: [get, list, watch, update, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents/status]
  verbs: [update, patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotcontents]
  verbs: [get, list, watch, update, patch]
- apiGroups: [groupsnapshot.storage.k8s.io]
  resources: [volumegroupsnapshotcontents/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "hangar:local-csi"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "hangar:local-csi"}
subjects: [{kind: ServiceAccount, name: hangar-local-csi, namespace: {{.Namespace}}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: hangar-local-csi, namespace: {{.Namespace}}}
spec:
  selector: {matchLabels: {app: hangar-local-csi}}
  template:
    metadata: {labels: {app: hangar-local-csi}}
    spec:
      serviceAccountName: hangar-local-csi
      priorityClassName: system-node-critical
      securityContext: {runAsUser: 0, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: csi-provisioner
        image: {{.ProvisionerImage}}
        imagePullPolicy: Never
        args: [--v=2, --csi-address=/csi/csi.sock, --node-deployment=true, --node-deployment-immediate-binding=false,
          --strict-topology=true, --leader-election=false, --timeout=120s]
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 256Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: socket-dir, mountPath: /csi}]
      - name: csi-snapshotter
        image: {{.SnapshotterImage}}
        imagePullPolicy: Never
        args: [--v=2, --csi-address=/csi/csi.sock, --node-deployment=true, --leader-election=false, --timeout=300s]
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 256Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        volumeMounts: [{name: socket-dir, mountPath: /csi}]
      volumes:
      - name: socket-dir
        hostPath: {path: {{.SocketDir}}, type: DirectoryOrCreate}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: {{.Driver}}}
spec:
  attachRequired: false
  podInfoOnMount: false
  # The kubelet gives a pod's fsGroup the volume's files, as for local-path's directories.
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent]
  storageCapacity: false
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: {{.Class}}}
provisioner: {{.Driver}}
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
allowVolumeExpansion: false
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: {{.Class}}
  annotations: {snapshot.storage.kubernetes.io/is-default-class: "true"}
driver: {{.Driver}}
deletionPolicy: Delete
`))
