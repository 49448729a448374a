package virtctl

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shell completion (cobra's `virtctl completion bash|zsh|fish|powershell`) of the names a
// command takes, listed from the cluster in the namespace the command line chose.

type resource string

const (
	vmsResource    resource = "virtualmachines"
	vmisResource   resource = "virtualmachineinstances"
	vmirssResource resource = "virtualmachineinstancereplicasets"
)

// completionTimeout bounds the listing: a shell waits for it at every Tab.
const completionTimeout = 5 * time.Second

// completeNames completes the first argument with the names of r.
func (c *cliContext) completeNames(r resource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return c.listNames(cmd.Context(), r, toComplete)
	}
}

// completeKindAndName completes "KIND NAME" (pause, unpause, expose): the kinds first, then the
// names of the kind given.
func (c *cliContext) completeKindAndName(kinds map[string]resource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			var out []string
			for kind := range kinds {
				if strings.HasPrefix(kind, toComplete) {
					out = append(out, kind)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		case 1:
			r, ok := kinds[strings.ToLower(args[0])]
			if !ok {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return c.listNames(cmd.Context(), r, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func (c *cliContext) listNames(ctx context.Context, r resource, prefix string) ([]string, cobra.ShellCompDirective) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	ns, err := c.namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	names, err := listNames(ctx, c, r, ns)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// listNames lists the names of r in ns.
func listNames(ctx context.Context, c *cliContext, r resource, ns string) ([]string, error) {
	kv, _, _, err := c.clients()
	if err != nil {
		return nil, err
	}
	var names []string
	switch r {
	case vmsResource:
		list, err := kv.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case vmisResource:
		list, err := kv.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	case vmirssResource:
		list, err := kv.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
	}
	return names, nil
}
