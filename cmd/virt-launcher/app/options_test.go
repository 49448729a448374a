package app

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidate(t *testing.T) {
	const (
		required = "namespace, name and uid are required"
		root     = "refusing to run as root"
	)
	asRoot := os.Geteuid() == 0
	instance := func(o *Options) { o.Launcher.Namespace, o.Launcher.Name, o.Launcher.UID = "ns", "vm1", "uid-1" }
	tests := []struct {
		name    string
		set     func(o *Options)
		wantErr []string
	}{
		{name: "a guest", set: instance},
		{name: "a guest without its instance", set: func(o *Options) { o.Launcher.Name = "vm1" }, wantErr: []string{required}},
		{name: "the probe needs no instance", set: func(o *Options) { o.QEMUCapabilitiesFile = "/caps.xml" }},
		{name: "the console log's follower needs no instance", set: func(o *Options) { o.ConsoleLogFile = "/run/console.log" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{}
			tt.set(o)
			assert.NoError(t, o.Complete())
			want := tt.wantErr
			if asRoot && o.Mode == ModeGuest {
				want = append(want, root)
			}
			err := o.Validate()
			if len(want) == 0 {
				assert.NoError(t, err)
				return
			}
			for _, w := range want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestCompleteChoosesTheMode(t *testing.T) {
	for _, tc := range []struct {
		caps, log string
		want      Mode
		err       bool
	}{
		{want: ModeGuest},
		{caps: "/caps.xml", want: ModeQEMUCapabilities},
		{log: "/run/console.log", want: ModeFollowConsoleLog},
		{caps: "/caps.xml", log: "/run/console.log", err: true},
	} {
		o := &Options{QEMUCapabilitiesFile: tc.caps, ConsoleLogFile: tc.log}
		err := o.Complete()
		if tc.err {
			assert.Error(t, err)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, o.Mode)
	}
}
