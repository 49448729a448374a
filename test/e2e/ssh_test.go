//go:build e2e

package e2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// sshInitrd is the test guest's initramfs with a second archive that brings dropbear and
// scp (hack/guest/build-kernelboot.sh). Nothing starts the server at boot: startSSHServer does.
const sshInitrd = "/boot/initramfs-ssh.cpio.gz"

// sshIdentity writes a fresh ed25519 key pair for virtctl's -i and returns the private key's
// path and the public key as an authorized_keys line.
func sshIdentity(t *testing.T) (string, string) {
	t.Helper()
	public, private, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(private, "e2e")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	sshPublic, err := ssh.NewPublicKey(public)
	require.NoError(t, err)
	return path, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPublic)))
}

// startSSHServer authorizes the key for root and starts dropbear on port 22 in the guest,
// through its serial console. The host keys are made on first use (-R).
func startSSHServer(t *testing.T, console *stream, authorized string) {
	t.Helper()
	console.typeUntil(t, "mkdir -p /root/.ssh && echo '"+authorized+"' > /root/.ssh/authorized_keys && "+
		"chmod 700 /root/.ssh && dropbear -R -E -p 22 && echo sshd-$((2*3))", "sshd-6")
}

// checkSSHAndSCP runs a command in the guest with virtctl ssh and copies a file there and back
// with virtctl scp, both with virtctl's built-in SSH client, through target (vm/NAME or
// vmi/NAME in ns). The guest's host key is recorded in a known_hosts file on first use and
// checked on every later connection.
func checkSSHAndSCP(t *testing.T, ns, target, identity string) {
	t.Helper()
	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	common := []string{"-n", ns, "--local-ssh=false", "-i", identity, "--known-hosts", knownHosts}
	var out []byte
	require.Eventually(t, func() bool {
		var err error
		out, err = virtctlCmd(t, append(append([]string{"ssh"}, common...), "root@"+target, "-c", "echo ssh-$((6*7)) from $(uname -s)")...).CombinedOutput()
		return err == nil && strings.Contains(string(out), "ssh-42 from Linux")
	}, 90*time.Second, 2*time.Second, "virtctl ssh %s runs a command (last: %s)", target, out)
	known, err := os.ReadFile(knownHosts)
	require.NoError(t, err)
	assert.Contains(t, string(known), strings.ReplaceAll(target, "/", ".")+"."+ns, "the guest's host key is recorded under its name")

	dir := t.TempDir()
	sent := make([]byte, 256<<10)
	_, err = rand.Read(sent)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sent"), sent, 0o600))
	out, err = virtctlCmd(t, append(append([]string{"scp"}, common...), filepath.Join(dir, "sent"), "root@"+target+":/tmp/copied")...).CombinedOutput()
	require.NoError(t, err, "virtctl scp to the guest: %s", out)
	out, err = virtctlCmd(t, append(append([]string{"scp"}, common...), "root@"+target+":/tmp/copied", filepath.Join(dir, "back"))...).CombinedOutput()
	require.NoError(t, err, "virtctl scp from the guest: %s", out)
	back, err := os.ReadFile(filepath.Join(dir, "back"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(sent, back), "the file came back unchanged (%d bytes sent, %d back)", len(sent), len(back))

	// A key the guest does not know is refused.
	stranger, _ := sshIdentity(t)
	out, err = virtctlCmd(t, "-n", ns, "ssh", "--local-ssh=false", "-i", stranger, "--known-hosts", knownHosts,
		"root@"+target, "-c", "true").CombinedOutput()
	require.Error(t, err, "an unknown key logs in: %s", out)
	assert.Contains(t, strings.ToLower(string(out)), "unable to authenticate")
}
