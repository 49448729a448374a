package virtctl

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// newGuestAgentCommand is guestosinfo, userlist or fslist: what the guest agent of a running
// instance reports, as indented JSON, as KubeVirt's virtctl prints it.
func newGuestAgentCommand(c *cliContext, use, subresource, short string) *cobra.Command {
	return &cobra.Command{
		Use:               use + " VMI",
		ValidArgsFunction: c.completeNames(vmisResource),
		Short:             short,
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			// Error() first: it decodes the server's Status (Raw's error does not).
			result := acts.client.Get().Namespace(ns).Resource("virtualmachineinstances").Name(args[0]).
				SubResource(subresource).Do(cmd.Context())
			if err := result.Error(); err != nil {
				return fmt.Errorf("%s of %s: %w", subresource, args[0], err)
			}
			raw, err := result.Raw()
			if err != nil {
				return fmt.Errorf("%s of %s: %w", subresource, args[0], err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("%s of %s: %w", subresource, args[0], err)
			}
			out, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(c.streams.Out, string(out))
			return nil
		},
	}
}
