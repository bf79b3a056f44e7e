package dialogs

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// CLI is what the commands need from the command line (package cli).
type CLI struct {
	// WithClient adds the client flags to a command and returns how to get its client
	// once they are parsed.
	WithClient func(*cobra.Command) func() *api.Client
	// Usage makes an error that exits 2 (a wrong call).
	Usage  func(format string, a ...any) error
	Stdout io.Writer
}

// Commands are `nudge answer`, `nudge approve` and `nudge deny`.
func Commands(cli CLI) []*cobra.Command {
	answer := command(cli, "answer RUNTIME --choice KEY --reason TEXT [--dialog ID]", "",
		"answer a runtime's approval dialog with one of its options",
		"Answer the approval dialog a runtime's agent shows (its `dialog` in `nudge ls -o json`, `nudge\n"+
			"watch`): --choice is an option's key or number. The key is typed only if that dialog\n"+
			"(--dialog ID; default: whatever dialog is up) is on screen at that moment and no human is\n"+
			"typing at the pane; otherwise nothing is typed and the error says what is there now (409\n"+
			"DIALOG_CHANGED), that no dialog is up (NO_DIALOG: nothing is typed into the composer), or\n"+
			"that the dialog was just answered (DIALOG_ANSWERED: one answer at a time, and never twice).\n"+
			"The reason goes into the audit log with who answered.")
	approve := command(cli, "approve RUNTIME --reason TEXT [--dialog ID]", "approve",
		"approve a runtime's approval dialog (its yes option)",
		"Answer the dialog a runtime's agent shows with its yes option (e.g. Claude Code's \"1. Yes\",\n"+
			"Codex's \"Yes, proceed (y)\"); see `nudge answer --help`.")
	deny := command(cli, "deny RUNTIME --reason TEXT [--dialog ID]", "deny",
		"deny a runtime's approval dialog (its no option)",
		"Answer the dialog a runtime's agent shows with its no option (e.g. Claude Code's \"3. No\",\n"+
			"Codex's \"No, and tell Codex what to do differently (esc)\"); see `nudge answer --help`.")
	return []*cobra.Command{answer, approve, deny}
}

func command(cli CLI, use, fixed, short, long string) *cobra.Command {
	var req api.AnswerRequest
	var output string
	var asJSON bool
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return cli.Usage("want one RUNTIME, got %d argument(s)", len(args))
		}
		return nil
	}}
	client := cli.WithClient(cmd)
	fs := cmd.Flags()
	fs.StringVar(&req.DialogID, "dialog", "", "the dialog's id: answer only if this dialog is still the one on screen")
	fs.StringVar(&req.Reason, "reason", "", "why (required: it goes into the audit log)")
	fs.StringVarP(&output, "output", "o", "table", "output format: json (the answer as a record) or table (a line; text is the same)")
	fs.BoolVar(&asJSON, "json", false, "print JSON (same as -o json)")
	if fixed == "" {
		fs.StringVar(&req.Choice, "choice", "", "the option's key or number (required)")
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if fixed != "" {
			req.Choice = fixed
		}
		switch {
		case req.Choice == "":
			return cli.Usage("--choice is required: an option's key or number (`nudge ls -o json` shows the dialog)")
		case req.Reason == "":
			return cli.Usage("--reason is required: it goes into the audit log")
		case output != "table" && output != "text" && output != "json":
			return cli.Usage("-o %q: want json or table", output)
		}
		c := client()
		defer c.Close()
		var out api.Answered
		if err := c.Do(cmd.Context(), "POST", "/v1/runtimes/"+url.PathEscape(args[0])+"/answer", req, &out); err != nil {
			return err
		}
		if output == "json" || asJSON {
			enc := json.NewEncoder(cli.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		}
		_, err := fmt.Fprintf(cli.Stdout, "answered %s: %q → %s (%s)\n", out.RuntimeID, out.Dialog.Title, out.Option.Label, out.Option.Key)
		return err
	}
	return cmd
}
