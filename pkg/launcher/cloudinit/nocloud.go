// Package cloudinit builds the NoCloud data source of a cloudInitNoCloud volume: an ISO 9660
// image labelled cidata with user-data, meta-data and, when given, network-config.
package cloudinit

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
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
}

// ForVolume is the NoCloud data of the instance's cloudInitNoCloud volume source. Secret
// references must have been resolved into inline data by whoever had API access (the
// handler does it before Sync): the launcher has none.
func ForVolume(vmi *v1.VirtualMachineInstance, src *v1.CloudInitNoCloudSource) (NoCloud, error) {
	if src.UserDataSecretRef != nil || src.NetworkDataSecretRef != nil {
		return NoCloud{}, fmt.Errorf("cloudInitNoCloud secret references must be resolved before the launcher sees them")
	}
	user, err := inlineOrBase64(src.UserData, src.UserDataBase64)
	if err != nil {
		return NoCloud{}, fmt.Errorf("userDataBase64: %w", err)
	}
	network, err := inlineOrBase64(src.NetworkData, src.NetworkDataBase64)
	if err != nil {
		return NoCloud{}, fmt.Errorf("networkDataBase64: %w", err)
	}
	hostname := vmi.Spec.Hostname
	if hostname == "" {
		hostname = vmi.Name
	}
	nc := NoCloud{
		UserData: user,
		// KubeVirt's instance id: stable for the instance, new for a new one of the same name.
		MetaData: MetaData(fmt.Sprintf("%s.%s", vmi.Name, vmi.Namespace), hostname),
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
	return base64.StdEncoding.DecodeString(b64)
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
	if err := WriteISO(&buf, Label, n.Files(), time.Now()); err != nil {
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
