package act

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

func usage(format string, a ...any) error { return fmt.Errorf("usage: "+format, a...) }

// TestOutputDefault: a command that acts prints a line on a terminal and JSON in a pipe,
// unless -o says; an unknown format is a usage error.
func TestOutputDefault(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	for i, tt := range []struct {
		stdout   any
		args     []string
		asJSON   bool
		badUsage bool
	}{
		{&bytes.Buffer{}, nil, true, false},
		{tty, nil, false, false},
		{tty, []string{"-o", "json"}, true, false},
		{tty, []string{"--json"}, true, false},
		{&bytes.Buffer{}, []string{"-o", "table"}, false, false},
		{&bytes.Buffer{}, []string{"-o", "yaml"}, false, true},
	} {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		var o *Output
		switch w := tt.stdout.(type) {
		case *bytes.Buffer:
			o = AddOutputFlags(cmd, w, usage)
		default:
			o = AddOutputFlags(cmd, tty, usage)
		}
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := o.AsJSON()
		if (err != nil) != tt.badUsage || err == nil && got != tt.asJSON {
			t.Errorf("#%d %v: got %v, %v", i, tt.args, got, err)
		}
	}
}

func TestLines(t *testing.T) {
	rt := api.Runtime{Runtime: nudge.Runtime{RuntimeID: "rt_w.a\x1b[2J", Agent: "demo", PaneID: "%1", TmuxSession: "agents_w",
		Status: nudge.StatusReady, Readiness: nudge.Ready}}
	for verb, want := range map[string]string{
		"spawned": "spawned rt_w.a\\x1b[2J (demo) in pane %1 of agents_w: READY",
		"paused":  "paused rt_w.a\\x1b[2J: its triggers wait until `nudge resume",
		"stopped": "it stays stopped until `nudge restart",
	} {
		if got := RuntimeLine(verb, rt); !strings.Contains(got, want) || strings.Contains(got, "\x1b") {
			t.Errorf("%s: %q, want %q in it", verb, got, want)
		}
	}
	tr := api.Trigger{TriggerID: "t1", RuntimeID: "rt_w.a", State: nudge.StateAcked, Result: nudge.ResultDelivered, Reply: "hi\x1b]0;x\x07"}
	if got := TriggerLine(tr); !strings.HasPrefix(got, "trigger t1 → rt_w.a: acked/delivered\nhi") || strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("trigger line: %q", got)
	}
}
