package cmd

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
)

// Build metadata, set with -ldflags "-X github.com/lockctl/lockctl/cmd.version=…"
// by make build, make image and releases. A build without them (`go install
// github.com/lockctl/lockctl@v0.2.0`, `go build`) takes them from the build
// information the Go toolchain records instead: see cli.BuildVersion.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// versionOptions configure `lockctl version`.
type versionOptions struct {
	f      *Factory
	Output string
}

func newVersionCmd(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	o := &versionOptions{f: f}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version of lockctl",
		Example: cli.Examples(`
			lockctl version
			lockctl version -o json
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runVersion, nil),
	}
	cli.AddOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func runVersion(_ context.Context, o *versionOptions) error {
	info, _ := debug.ReadBuildInfo()
	v := cli.BuildVersion(version, commit, date, info)
	if o.Output != "" {
		return printers.Object(o.f.IOStreams.Out, o.Output, v)
	}
	_, err := fmt.Fprintf(o.f.IOStreams.Out, "lockctl %s (commit %s, built %s, %s, %s)\n", v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
	return err
}
