package cmd

import "github.com/lockctl/lockctl/cmd/internal/cli"

// Factory holds lockctl's dependencies (cli.Factory): Run takes one, and
// tests build one on fakes.
type Factory = cli.Factory

// IOStreams are the standard streams a command reads and writes.
type IOStreams = cli.IOStreams

// NewFactory returns the real dependencies on the process's streams, its
// clients identified as this version of lockctl.
func NewFactory(streams IOStreams) *Factory { return cli.NewFactory(streams, version) }
