package virtctl

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// newCreateCommand is KubeVirt's `virtctl create`: manifests of a VirtualMachine, an instance
// type or a preference, printed for `kubectl apply -f -` or an editor. Nothing reaches the
// cluster, so it needs neither a kubeconfig nor a connection.
func newCreateCommand(c *cliContext) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create (vm|instancetype|preference|clone)",
		Short: "Print the manifest of a virtual machine, an instance type, a preference or a clone",
		Long: "Print a manifest as KubeVirt's virtctl create does; nothing is sent to the cluster.\n" +
			"With -n/--namespace, the manifest names that namespace.",
		Example: "  virtctl create vm --name my-vm --instancetype u1.medium --preference fedora \\\n" +
			"    --volume-containerdisk=src:quay.io/containerdisks/fedora:latest | kubectl apply -f -",
		Args: cobra.NoArgs, // `create vmm` is an unknown command, not the help
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCreateVMCommand(c), newCreateInstancetypeCommand(c), newCreatePreferenceCommand(c), newCreateCloneCommand(c))
	return cmd
}

// explicitNamespace is the namespace -n gave, or "": as KubeVirt's virtctl, a manifest names a
// namespace only when the command line does, and kubectl puts it in the context's otherwise.
func (c *cliContext) explicitNamespace() string {
	if c.flags.Namespace == nil {
		return ""
	}
	return *c.flags.Namespace
}

// printManifest writes obj as YAML, the form kubectl apply -f - reads.
func printManifest(w io.Writer, obj any) error {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// flagError is the error of a flag's bad value; it names the flag, as the user typed it.
func flagError(flag, value, format string, args ...any) error {
	return fmt.Errorf("invalid --%s %q: %s", flag, value, fmt.Sprintf(format, args...))
}

// params are the key:value pairs of a flag such as --volume-containerdisk, in KubeVirt's
// syntax: src:quay.io/containerdisks/fedora:latest,name:root,bootorder:1. Each pair is split
// at its first colon, since image references hold colons too.
type params struct {
	flag, value string
	values      map[string]string
}

// parseParams parses a flag's value; keys other than supported are refused rather than
// ignored, so a typo does not silently give another VM.
func parseParams(flag, value string, supported ...string) (params, error) {
	p := params{flag: flag, value: value, values: map[string]string{}}
	if value == "" {
		return p, p.errorf("no params: want %s", strings.Join(supported, ":...,")+":...")
	}
	for _, pair := range strings.Split(value, ",") {
		key, val, ok := strings.Cut(pair, ":")
		switch {
		case !ok:
			return p, p.errorf("%q is not key:value", pair)
		case !slices.Contains(supported, key):
			return p, p.errorf("unknown param %q, supported: %s", key, strings.Join(supported, ", "))
		}
		if _, dup := p.values[key]; dup {
			return p, p.errorf("param %q given twice", key)
		}
		p.values[key] = val
	}
	return p, nil
}

func (p params) errorf(format string, args ...any) error {
	return flagError(p.flag, p.value, format, args...)
}

// required is a param that must be there and not empty.
func (p params) required(key string) (string, error) {
	if p.values[key] == "" {
		return "", p.errorf("%s must be given", key)
	}
	return p.values[key], nil
}

// bootOrder is the bootorder param: nil without one. QEMU's bootindex is an int32, and 0
// means no order to KubeVirt, so both bounds are the server's.
func (p params) bootOrder() (*uint, error) {
	s, ok := p.values["bootorder"]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	switch {
	case err != nil:
		return nil, p.errorf("bootorder %q is not a number", s)
	case n == 0:
		return nil, p.errorf("bootorder must be greater than 0")
	case n > math.MaxInt32:
		return nil, p.errorf("bootorder must be at most %d", math.MaxInt32)
	}
	order := uint(n)
	return &order, nil
}

// splitPrefixed splits KubeVirt's PREFIX/NAME (kind/name, namespace/name); the prefix is
// optional, the name is not.
func splitPrefixed(s string) (prefix, name string, err error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) > 2:
		return "", "", fmt.Errorf("%d slashes, want [PREFIX/]NAME", len(parts)-1)
	case parts[len(parts)-1] == "":
		return "", "", fmt.Errorf("the name is empty")
	case len(parts) == 2:
		return parts[0], parts[1], nil
	}
	return "", parts[0], nil
}

// fixedCompletions completes a flag with its known values.
func fixedCompletions(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
