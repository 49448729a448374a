// Package csisanity runs csi-test's sanity suite (github.com/kubernetes-csi/csi-test/v5,
// pkg/sanity: what csi-sanity runs) against hangar-local-csi. A module of its own: the suite
// needs CSI spec v1.13 and a newer grpc than the Kubernetes build of the tools module uses, and
// requiring it there would change what the Kubernetes binaries are built with.
package csisanity

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/hangarvm/hangar/hack/tools/internal/localcsi"
)

const node = "hangar-node-1"

// privateNamespaceEnv marks the test binary re-executed in a mount namespace of its own.
const privateNamespaceEnv = "HANGAR_CSISANITY_PRIVATE_MOUNTS"

// TestMain runs the suite, as root, in a private mount namespace, so the bind mounts of
// NodePublishVolume never reach the host's.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 && os.Getenv(privateNamespaceEnv) == "" {
		if unshare, err := exec.LookPath("unshare"); err == nil {
			cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", os.Args[0]}, os.Args[1:]...)...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			cmd.Env = append(os.Environ(), privateNamespaceEnv+"=1")
			if err := cmd.Run(); err != nil {
				if exit, ok := err.(*exec.ExitError); ok {
					os.Exit(exit.ExitCode())
				}
				fmt.Fprintln(os.Stderr, "unshare:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// ids makes IDs of the driver's form that name nothing (the suite's "valid" IDs), and IDs of
// no form at all.
type ids struct{}

func (ids) GenerateUniqueValidVolumeID() string {
	u := uuid.New()
	return fmt.Sprintf("vol-%x@%s", u[:], node)
}
func (ids) GenerateInvalidVolumeID() string   { return "not-a-volume-id" }
func (ids) GenerateUniqueValidNodeID() string { return node }
func (ids) GenerateInvalidNodeID() string     { return "not a node" }

// accessTypeEnv selects the volumes the suite asks for: mount (the default) or block.
const accessTypeEnv = "HANGAR_CSISANITY_ACCESS_TYPE"

func TestSanity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the suite publishes volumes: bind mounts (and loop devices) need root")
	}
	accessType := os.Getenv(accessTypeEnv)
	if accessType == "" {
		accessType = "mount"
	}
	dir := t.TempDir()
	publishDir := filepath.Join(dir, "pods")
	if err := os.Mkdir(publishDir, 0o750); err != nil {
		t.Fatal(err)
	}
	d, err := localcsi.New(localcsi.Config{Node: node, DataDir: filepath.Join(dir, "data"), Capacity: 100 << 30,
		PublishDir: publishDir, BlockPublishDir: publishDir})
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "csi.sock")
	l, err := localcsi.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := d.NewServer()
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	cfg := sanity.NewTestConfig()
	cfg.Address = "unix://" + socket
	cfg.TargetPath = filepath.Join(publishDir, "target")
	cfg.StagingPath = filepath.Join(publishDir, "staging")
	cfg.TestVolumeSize = 64 << 20
	cfg.TestVolumeAccessType = accessType
	cfg.IDGen = ids{}
	sanity.Test(t, cfg)
}

// TestSanityBlock runs the suite again on block volumes, in a process of its own (Ginkgo runs
// one suite per process).
func TestSanityBlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the suite publishes volumes: loop devices and bind mounts need root")
	}
	if os.Getenv(accessTypeEnv) != "" {
		t.Skip("this process runs the suite once, on " + os.Getenv(accessTypeEnv) + " volumes")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSanity$", "-test.count=1")
	cmd.Env = append(os.Environ(), accessTypeEnv+"=block")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the suite on block volumes: %v\n%s", err, out)
	}
}
