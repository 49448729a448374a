package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Imported images: a docker-archive tarball written by imagebuild (deterministic: an unchanged
// input gives an identical file) and imported into every node's containerd, where pods use it
// with imagePullPolicy Never or IfNotPresent. The other way onto the nodes is the registry
// (registry.go), from which they pull.

// ImageTarball is where an image's tarball is kept.
func (s *Settings) ImageTarball(ref string) string {
	return filepath.Join(s.ImageDir(), strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
}

// BuildImage writes ref's tarball with imagebuild's flags.
func (s *Settings) BuildImage(ref string, flags ...string) error {
	if err := os.MkdirAll(s.ImageDir(), 0o755); err != nil {
		return err
	}
	args := append([]string{"-image", ref, "-out", s.ImageTarball(ref)}, flags...)
	return run(s.Bin("imagebuild"), args...)
}

// ImportImage imports a tarball into every node's containerd, unless the node holds exactly
// this tarball's content under that name.
func (s *Settings) ImportImage(ref, tarball string) error {
	sum, err := fileSum(tarball)
	if err != nil {
		return err
	}
	for _, n := range s.runningNodes() {
		stamp := fmt.Sprintf("%s.imported.%s", tarball, n.Name)
		if b, err := os.ReadFile(stamp); err == nil && string(b) == sum && s.hasImage(n, ref) {
			continue
		}
		if err := run(s.Bin("ctr"), "--address", n.ContainerdSocket(), "--namespace", "k8s.io",
			"images", "import", "--snapshotter", "overlayfs", tarball); err != nil {
			return fmt.Errorf("import %s into %s: %w", ref, n.Name, err)
		}
		if !s.hasImage(n, ref) {
			return fmt.Errorf("%s does not list %s after importing %s", n.Name, ref, tarball)
		}
		if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (s *Settings) hasImage(n *Node, ref string) bool {
	out, err := output(s.Bin("ctr"), "--address", n.ContainerdSocket(), "--namespace", "k8s.io", "images", "ls", "-q", "name=="+ref)
	return err == nil && strings.TrimSpace(out) != ""
}

// runningNodes are the nodes whose containerd runs.
func (s *Settings) runningNodes() []*Node {
	var out []*Node
	for _, n := range s.existingNodes() {
		if s.Pid("containerd@"+n.Name, s.ContainerdBinary()) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// existingNodes are the nodes of this run and any other an earlier, larger run left a
// directory of, in order.
func (s *Settings) existingNodes() []*Node {
	indexes := map[int]bool{}
	for i := 1; i <= s.Nodes; i++ {
		indexes[i] = true
	}
	entries, _ := os.ReadDir(s.NodesDir())
	for _, e := range entries {
		if i, ok := s.nodeIndex(e.Name()); ok {
			indexes[i] = true
		}
	}
	var out []*Node
	for i := 1; i <= 200; i++ {
		if indexes[i] {
			out = append(out, s.Node(i))
		}
	}
	return out
}

// BaseImages builds and imports the sandbox (pause) image containerd needs for every pod,
// and a busybox image (Debian's busybox-static, every applet) for tests and helpers.
func (s *Settings) BaseImages() error {
	pause := s.ImageTarball(s.PauseImage)
	if newer(s.Bin("pause"), pause) {
		if err := s.BuildImage(s.PauseImage, "-file", s.Bin("pause")+":/pause", "-entrypoint", "/pause"); err != nil {
			return err
		}
	}
	busybox := s.ImageTarball(s.BusyboxImage)
	if newer("/bin/busybox", busybox) {
		if err := s.buildBusybox(); err != nil {
			return err
		}
	}
	for ref, tar := range map[string]string{s.PauseImage: pause, s.BusyboxImage: busybox} {
		if err := s.ImportImage(ref, tar); err != nil {
			return err
		}
	}
	return nil
}

func (s *Settings) buildBusybox() error {
	root := filepath.Join(s.ImageDir(), "busybox-rootfs")
	os.RemoveAll(root)
	defer os.RemoveAll(root)
	for _, d := range []string{"bin", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	// /tmp as on any system: a non-root container (Pod Security restricted) writes there.
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return err
	}
	if err := copyFile("/bin/busybox", filepath.Join(root, "bin", "busybox"), 0o755); err != nil {
		return err
	}
	list, err := output("/bin/busybox", "--list")
	if err != nil {
		return err
	}
	for _, applet := range strings.Fields(list) {
		if applet != "busybox" {
			if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
				return err
			}
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
		"etc/group":  "root:x:0:\nnobody:x:65534:\n",
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return s.BuildImage(s.BusyboxImage, "-dir", root, "-cmd", "sh")
}

// newer says whether src is newer than dst, or dst is missing.
func newer(src, dst string) bool {
	si, err := os.Stat(src)
	if err != nil {
		return true
	}
	di, err := os.Stat(dst)
	return err != nil || si.ModTime().After(di.ModTime())
}

func fileSum(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
