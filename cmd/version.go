package cmd

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/printers"
)

// Build metadata, set with -ldflags "-X github.com/lockctl/lockctl/cmd.version=…".
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// versionInfo is what `lockctl version -o json|yaml` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

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
	v := versionInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if o.Output != "" {
		return printers.Object(o.f.IOStreams.Out, o.Output, v)
	}
	_, err := fmt.Fprintf(o.f.IOStreams.Out, "lockctl %s (commit %s, built %s, %s, %s)\n", v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
	return err
}
