package demoagent

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Command is the hidden `nudge demo-agent [--session-id ID] [--work DURATION]` that
// `nudge spawn --agent demo` runs; usage makes the error of a wrong call (exit 2).
func Command(usage func(format string, a ...any) error) *cobra.Command {
	return &cobra.Command{Use: "demo-agent [--session-id ID] [--work DURATION]", Short: "the demo agent (run by spawn --agent demo)",
		Hidden: true, DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				return cmd.Help()
			}
			switch Main(args) {
			case 0:
				return nil
			case 2:
				return usage("want --session-id ID and --work DURATION")
			}
			return errors.New("the demo agent failed")
		}}
}

// Self is this program's path, for the launch word "nudge" (panes.Config.Self): the
// demo agent runs the daemon's own binary. "" for a test binary, which is no nudge.
func Self() string {
	exe, err := os.Executable()
	if err != nil || strings.HasSuffix(exe, ".test") {
		return ""
	}
	return exe
}
