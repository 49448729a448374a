// Package cloudinit builds the NoCloud data source of a cloudInitNoCloud volume: an ISO 9660
// image labelled cidata with user-data, meta-data and, when given, network-config.
package cloudinit

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Label is the volume label cloud-init looks for.
const Label = "cidata"

// NoCloud is the content of a NoCloud data source.
type NoCloud struct {
	UserData      []byte
	MetaData      []byte
	NetworkConfig []byte // omitted from the image when nil
	// Created dates the image's files: the instance's creation, so that the image of a
	// migration's target is the source's, byte for byte (the guest may have it mounted).
	Created time.Time
}

// ForVolume is the NoCloud data of the instance's cloudInitNoCloud volume source. The Secrets
// it names are read from secretsDir, where the launcher pod mounts each as a directory of its
// keys (<secretsDir>/<secret>/<key>, virt-controller's launcherpod.SecretsDir): the launcher
// has no API access, and no Hangar component reads Secrets through the API for it.
func ForVolume(vmi *v1.VirtualMachineInstance, src *v1.CloudInitNoCloudSource, secretsDir string) (NoCloud, error) {
	var user, network []byte
	var err error
	if ref := src.UserDataSecretRef; ref != nil {
		user, err = readSecretKey(secretsDir, ref.Name, "userdata", "userData")
	} else {
		user, err = inlineOrBase64(src.UserData, src.UserDataBase64)
	}
	if err != nil {
		return NoCloud{}, fmt.Errorf("user data: %w", err)
	}
	if ref := src.NetworkDataSecretRef; ref != nil {
		network, err = readSecretKey(secretsDir, ref.Name, "networkdata", "networkData")
	} else {
		network, err = inlineOrBase64(src.NetworkData, src.NetworkDataBase64)
	}
	if err != nil {
		return NoCloud{}, fmt.Errorf("network data: %w", err)
	}
	hostname := vmi.Spec.Hostname
	if hostname == "" {
		hostname = vmi.Name
	}
	nc := NoCloud{
		UserData: user,
		// KubeVirt's instance id: stable for the instance, new for a new one of the same name.
		MetaData: MetaData(fmt.Sprintf("%s.%s", vmi.Name, vmi.Namespace), hostname),
		Created:  vmi.CreationTimestamp.Time,
	}
	if len(network) > 0 {
		nc.NetworkConfig = network
	}
	return nc, nil
}

func inlineOrBase64(inline, b64 string) ([]byte, error) {
	if inline != "" {
		return []byte(inline), nil
	}
	if b64 == "" {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return data, nil
}

// readSecretKey reads the first of keys that the mounted Secret name has.
func readSecretKey(secretsDir, name string, keys ...string) ([]byte, error) {
	// The name is a directory below secretsDir: it may not lead out of it (the API and
	// virt-controller refuse such names too).
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("secret name %q is not a Secret's", name)
	}
	dir := filepath.Join(secretsDir, name)
	for _, key := range keys {
		data, err := os.ReadFile(filepath.Join(dir, key))
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("secret %s is not mounted at %s: %w", name, dir, err)
	}
	return nil, fmt.Errorf("secret %s has none of the keys %s", name, strings.Join(keys, ", "))
}

// MetaData is NoCloud meta-data (YAML) with an instance id and a hostname.
func MetaData(instanceID, hostname string) []byte {
	return []byte(fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", instanceID, hostname))
}

// Files are the image's files.
func (n NoCloud) Files() []File {
	files := []File{{Name: "meta-data", Data: n.MetaData}, {Name: "user-data", Data: n.UserData}}
	if n.NetworkConfig != nil {
		files = append(files, File{Name: "network-config", Data: n.NetworkConfig})
	}
	return files
}

// WriteFile writes the ISO to path (atomically: a reader sees the old file or the new one).
func (n NoCloud) WriteFile(path string) error {
	var buf bytes.Buffer
	created := n.Created
	if created.IsZero() {
		created = time.Now()
	}
	if err := WriteISO(&buf, Label, n.Files(), created); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
