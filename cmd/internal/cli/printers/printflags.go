package printers

import "github.com/spf13/pflag"

// Forms says which of kubectl's -o forms a command prints besides json,
// yaml, name and the templates, which every reading command prints.
type Forms struct {
	// Wide says the command has a -o wide table.
	Wide bool
	// Table says the command prints rows, so --no-headers, --sort-by and
	// custom-columns apply.
	Table bool
}

// Help lists the -o forms, for a flag's help.
func (f Forms) Help() string { return (&OutputFlags{Forms: f}).allowed() }

// PrintFlags are a reading command's -o/--output and, for a command that
// prints rows, --no-headers and --sort-by: the flag group of kubectl's
// genericclioptions.PrintFlags. The command sets Forms before AddFlags;
// ToPrinter checks the values and returns what prints them.
type PrintFlags struct {
	// Output is -o as given; "" is the command's table.
	Output string
	// NoHeaders drops the header of tables (--no-headers).
	NoHeaders bool
	// SortBy is a JSONPath expression the rows are sorted by (--sort-by);
	// "" keeps the command's own order.
	SortBy string
	// Forms are the forms the command prints; the zero value prints no
	// table beyond the objects' forms.
	Forms Forms
}

// AddFlags binds -o/--output and, with Forms.Table, --no-headers and
// --sort-by.
func (p *PrintFlags) AddFlags(fs *pflag.FlagSet) {
	complete := []string{"name", "json", "yaml"}
	if p.Forms.Wide {
		complete = append([]string{"wide"}, complete...)
	}
	fs.VarP(outputFlag{v: &p.Output, complete: complete}, "output", "o", "output format: "+p.Forms.Help())
	if p.Forms.Table {
		fs.BoolVar(&p.NoHeaders, "no-headers", p.NoHeaders, "print tables without their header")
		fs.StringVar(&p.SortBy, "sort-by", p.SortBy, "sort the rows by a JSONPath expression of each object, such as .metadata.name")
	}
}

// ToPrinter checks -o and --sort-by, reading template and column files,
// and returns them parsed; its errors name the flag and the problem.
func (p *PrintFlags) ToPrinter() (*OutputFlags, error) {
	o := &OutputFlags{Output: p.Output, NoHeaders: p.NoHeaders, SortBy: p.SortBy, Forms: p.Forms}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// outputFlag is a reading command's -o: any string (ToPrinter checks it),
// completed with the forms that take no argument.
type outputFlag struct {
	v        *string
	complete []string
}

var _ pflag.Value = outputFlag{}

func (f outputFlag) String() string     { return *f.v }
func (f outputFlag) Type() string       { return "string" }
func (f outputFlag) Set(s string) error { *f.v = s; return nil }

// Allowed lists the forms that take no argument, for completion.
func (f outputFlag) Allowed() []string { return f.complete }
