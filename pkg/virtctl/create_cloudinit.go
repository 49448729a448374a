package virtctl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// The cloud-init part of `virtctl create vm`: a NoCloud volume named cloudinitdisk with the
// user data given (base64), or a #cloud-config made from --user, --password-file, --ssh-key
// and --ga-manage-ssh, as KubeVirt's virtctl writes it.

const (
	cloudInitDisk      = "cloudinitdisk"
	cloudConfigHeader  = "#cloud-config"
	cloudInitNoCloud   = "nocloud"
	cloudInitNone      = "none"
	cloudInitConfigDrv = "configdrive"
)

// cloudInitFlags are the flags that ask for a cloud-init volume.
var cloudInitFlags = []string{"user", "password-file", "ssh-key", "ga-manage-ssh", "cloud-init", "cloud-init-user-data", "cloud-init-network-data"}

type cloudInitOptions struct {
	dataSource, userData, networkData, user, passwordFile string
	sshKeys                                               []string
	gaManageSSH                                           bool
}

func (o *cloudInitOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.user, "user", "", "the user of the generated cloud-config")
	f.StringVar(&o.passwordFile, "password-file", "", "a file holding the password of the generated cloud-config (stored in the VM in clear text)")
	f.StringSliceVar(&o.sshKeys, "ssh-key", nil, "SSH authorized keys of the generated cloud-config; may be repeated")
	f.BoolVar(&o.gaManageSSH, "ga-manage-ssh", false, "let the guest agent manage SSH keys (an SELinux boolean set by the generated cloud-config)")
	f.StringVar(&o.dataSource, "cloud-init", o.dataSource, "the cloud-init data source: nocloud, or none for no cloud-init volume")
	f.StringVar(&o.userData, "cloud-init-user-data", "", "the cloud-init user data, base64-encoded, instead of a generated cloud-config")
	f.StringVar(&o.networkData, "cloud-init-network-data", "", "the cloud-init network data, base64-encoded")
	for _, generated := range []string{"user", "password-file", "ssh-key", "ga-manage-ssh"} {
		cmd.MarkFlagsMutuallyExclusive("cloud-init-user-data", generated)
	}
	fixedCompletions(cmd, "cloud-init", cloudInitNoCloud, cloudInitNone)
}

// volume is the cloud-init volume the flags ask for, or nil.
func (o *cloudInitOptions) volume(flags *pflag.FlagSet, warnings io.Writer) (*v1.Volume, error) {
	var unused []string // if there is no volume
	for _, name := range cloudInitFlags {
		if flags.Changed(name) && name != "cloud-init" {
			unused = append(unused, "--"+name)
		}
	}
	if len(unused) == 0 && !flags.Changed("cloud-init") {
		return nil, nil
	}
	switch strings.ToLower(o.dataSource) {
	case cloudInitNoCloud:
	case cloudInitNone:
		if len(unused) > 0 {
			fmt.Fprintf(warnings, "Warning: --cloud-init=none: no cloud-init volume; ignoring %s\n", strings.Join(unused, ", "))
		}
		return nil, nil
	case cloudInitConfigDrv:
		return nil, flagError("cloud-init", o.dataSource, "Hangar has no configDrive volumes; use nocloud")
	default:
		return nil, flagError("cloud-init", o.dataSource, "want %s or %s", cloudInitNoCloud, cloudInitNone)
	}
	// virt-api refuses what does not decode; better to hear it from the flag.
	for _, data := range []struct{ flag, value string }{{"cloud-init-user-data", o.userData}, {"cloud-init-network-data", o.networkData}} {
		if _, err := base64.StdEncoding.DecodeString(data.value); err != nil {
			return nil, flagError(data.flag, shorten(data.value), "not base64: %v", err)
		}
	}
	src := &v1.CloudInitNoCloudSource{UserDataBase64: o.userData, NetworkDataBase64: o.networkData}
	if o.userData == "" {
		config, err := o.cloudConfig(warnings)
		if err != nil {
			return nil, err
		}
		src.UserData = config
	}
	// Flags that add nothing (an empty password file) make no volume, unless one was asked for.
	if !flags.Changed("cloud-init") && src.UserData == cloudConfigHeader && src.NetworkDataBase64 == "" {
		return nil, nil
	}
	return &v1.Volume{Name: cloudInitDisk, VolumeSource: v1.VolumeSource{CloudInitNoCloud: src}}, nil
}

// cloudConfig is the #cloud-config of --user, --password-file, --ssh-key and --ga-manage-ssh,
// with KubeVirt's keys and order. Values are YAML scalars, quoted where YAML needs it (a
// password starting with # or holding ": ").
func (o *cloudInitOptions) cloudConfig(warnings io.Writer) (string, error) {
	lines := []string{cloudConfigHeader}
	if o.user != "" {
		user, ok := yamlScalar(o.user)
		if !ok {
			return "", flagError("user", o.user, "must be one line")
		}
		lines = append(lines, "user: "+user)
	}
	if o.passwordFile != "" {
		data, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return "", flagError("password-file", o.passwordFile, "%v", err)
		}
		if password := strings.TrimSpace(string(data)); password != "" {
			quoted, ok := yamlScalar(password)
			if !ok {
				return "", flagError("password-file", o.passwordFile, "the password must be one line")
			}
			lines = append(lines, "password: "+quoted, "chpasswd: { expire: False }")
			fmt.Fprintln(warnings, "Warning: --password-file: the password is stored in clear text in the VM's cloud-init user data")
		}
	}
	if len(o.sshKeys) > 0 {
		lines = append(lines, "ssh_authorized_keys:")
		for _, key := range o.sshKeys {
			quoted, ok := yamlScalar(key)
			if !ok {
				return "", flagError("ssh-key", shorten(key), "must be one line")
			}
			lines = append(lines, "  - "+quoted)
		}
	}
	if o.gaManageSSH {
		lines = append(lines, "runcmd:", "  - [ setsebool, -P, 'virt_qemu_ga_manage_ssh', 'on' ]")
	}
	return strings.Join(lines, "\n"), nil
}

// yamlScalar is s as a one-line YAML scalar: plain when YAML reads it back as the same string,
// else double-quoted (a JSON string is one). yaml.Marshal would fold a long SSH key over lines.
// ok is false for a value of several lines.
func yamlScalar(s string) (scalar string, ok bool) {
	if strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	var back any
	if err := yaml.Unmarshal([]byte(s), &back); err == nil && back == any(s) {
		return s, true
	}
	quoted, err := json.Marshal(s)
	return string(quoted), err == nil
}

// shorten keeps long values (user data, keys) out of error messages.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
