package virtctl

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/hangarvm/hangar/pkg/version"
)

func newVersionCommand(c *cliContext) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(c.streams.Out, "Client Version: %#v\n", version.Get())
			if clientOnly {
				return nil
			}
			_, acts, _, err := c.clients()
			if err != nil {
				return err
			}
			raw, err := acts.client.Get().AbsPath("/apis", subresourcesGV.String(), "version").DoRaw(cmd.Context())
			if err != nil {
				return fmt.Errorf("server version: %w", err)
			}
			var server apimachineryversion.Info
			if err := json.Unmarshal(raw, &server); err != nil {
				return fmt.Errorf("server version: %w", err)
			}
			fmt.Fprintf(c.streams.Out, "Server Version: %#v\n", server)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the client version")
	return cmd
}
