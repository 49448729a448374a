// Package app is virt-exportserver's command line: its flags (Options) and running the
// server they describe.
package app

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hangarvm/hangar/pkg/exportserver"
)

// Options are virt-exportserver's flags. The export controller writes them; the spelling
// (one dash, -volume repeated) is its contract with this binary.
type Options struct {
	Listen    string
	CertFile  string
	KeyFile   string
	TokenFile string
	// ExpiresText is -expires as given; Complete parses it into Expires.
	ExpiresText string
	Expires     time.Time
	Volumes     volumeFlags
}

// NewOptions returns the defaults: the paths the export pod mounts its Secrets at.
func NewOptions() *Options {
	return &Options{
		Listen:    ":8443",
		CertFile:  "/etc/export/tls/tls.crt",
		KeyFile:   "/etc/export/tls/tls.key",
		TokenFile: "/etc/export/token/token",
	}
}

// AddFlags adds the flags to a flag set. Go's flag package, not pflag: the controller's
// command line spells long flags with one dash.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "address to serve HTTPS on")
	fs.StringVar(&o.CertFile, "cert", o.CertFile, "TLS certificate (PEM); read again when it changes")
	fs.StringVar(&o.KeyFile, "key", o.KeyFile, "TLS private key (PEM); read again when it changes")
	fs.StringVar(&o.TokenFile, "token-file", o.TokenFile, "file holding the export's token, read per request; empty refuses every request")
	fs.StringVar(&o.ExpiresText, "expires", o.ExpiresText, "RFC 3339 time after which every data request gets 410 Gone (required)")
	fs.Var(&o.Volumes, "volume", "NAME=KIND:PATH, repeated; KIND is kubevirt (a directory with disk.img), block (a device) or archive (a directory)")
}

// Complete parses -expires.
func (o *Options) Complete() error {
	if o.ExpiresText == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, o.ExpiresText)
	if err != nil {
		return fmt.Errorf("-expires: %w", err)
	}
	o.Expires = t
	return nil
}

// Validate checks that the server has what it needs. An export without an expiry would
// serve for as long as its token leaks, so -expires is required.
func (o *Options) Validate() error {
	var errs []error
	if o.Listen == "" || o.CertFile == "" || o.KeyFile == "" || o.TokenFile == "" {
		errs = append(errs, errors.New("-listen, -cert, -key and -token-file must not be empty"))
	}
	if o.Expires.IsZero() {
		errs = append(errs, errors.New("-expires is required"))
	}
	if len(o.Volumes) == 0 {
		errs = append(errs, errors.New("at least one -volume is required"))
	}
	seen := map[string]bool{}
	for _, v := range o.Volumes {
		if seen[v.Name] {
			errs = append(errs, fmt.Errorf("volume %s is given twice", v.Name))
		}
		seen[v.Name] = true
	}
	return errors.Join(errs...)
}

// volumeFlags is the repeated -volume flag; a bad one fails the parse.
type volumeFlags []exportserver.Volume

func (v *volumeFlags) String() string {
	var s []string
	for _, vol := range *v {
		s = append(s, vol.String())
	}
	return strings.Join(s, ",")
}

func (v *volumeFlags) Set(spec string) error {
	vol, err := exportserver.ParseVolume(spec)
	if err != nil {
		return err
	}
	*v = append(*v, vol)
	return nil
}
