package act

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// OutputHelp is the output convention of the commands that act, said in their --help.
const OutputHelp = "output: table (a short line for a person), json (the record); default: table on a terminal, json when stdout is a pipe or a file"

// Output is -o json|table (and --json) of a command that acts: a short line on a terminal,
// the record as JSON in a pipe or a file (scripts read JSON whatever they ran before).
type Output struct {
	format string
	json   bool
	stdout io.Writer
	usage  func(format string, a ...any) error
}

// AddOutputFlags adds -o and --json to cmd, whose stdout is stdout; usage makes the error
// of an unknown format (exit 2).
func AddOutputFlags(cmd *cobra.Command, stdout io.Writer, usage func(format string, a ...any) error) *Output {
	o := &Output{stdout: stdout, usage: usage}
	cmd.Flags().StringVarP(&o.format, "output", "o", "", OutputHelp)
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON (same as -o json)")
	return o
}

// AsJSON reports whether to print JSON.
func (o *Output) AsJSON() (bool, error) {
	switch {
	case o.json || o.format == "json":
		return true, nil
	case o.format == "table":
		return false, nil
	case o.format == "":
		f, ok := o.stdout.(*os.File)
		return !ok || !term.IsTerminal(int(f.Fd())), nil
	}
	return false, o.usage("-o %q: want json or table", o.format)
}
