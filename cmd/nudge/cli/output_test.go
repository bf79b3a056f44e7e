package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// runOnTerminal runs a client command in-process with its stdout a terminal (a pty), as a
// person's shell runs it, and returns what the terminal showed.
func (td *testDaemon) runOnTerminal(args ...string) (string, int) {
	td.t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		td.t.Fatal(err)
	}
	defer ptmx.Close()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(ptmx); got <- string(b) }()
	var errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: tty, stderr: &errb, getenv: func(k string) string {
		if k == "NUDGE_SOCKET" {
			return td.cfg.Socket
		}
		return os.Getenv(k)
	}}
	code := run(context.Background(), env, args)
	tty.Close()
	return strings.ReplaceAll(<-got, "\r\n", "\n"), code
}

// TestActingCommandsOutput: the commands that act print a short line for a person on a
// terminal and the record as JSON in a pipe or with -o json (they printed JSON on a
// terminal too); audit and events print tables with a header and no raw JSON in them.
func TestActingCommandsOutput(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("out", "sh")

	out, code := td.runOnTerminal("pause", rt.RuntimeID, "--reason", "by hand")
	if code != 0 || !strings.HasPrefix(out, "paused "+rt.RuntimeID+": ") || strings.Contains(out, "{") {
		t.Errorf("pause on a terminal: %d %q", code, out)
	}
	out, code = td.runOnTerminal("resume", rt.RuntimeID, "-o", "json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["runtime_id"] != rt.RuntimeID {
		t.Errorf("resume -o json on a terminal: %d %q", code, out)
	}
	out, code = td.runOnTerminal("trigger", "--workspace", "out", "--agent", "sh", "--id", "out-1", "--wait", "echo hi")
	if code != 0 || !strings.HasPrefix(out, "trigger out-1 → "+rt.RuntimeID+": acked") {
		t.Errorf("trigger on a terminal: %d %q", code, out)
	}
	// In a pipe: JSON, as scripts have always read it.
	stdout, errOut, code := td.runCLI("pause", rt.RuntimeID)
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil {
		t.Errorf("pause in a pipe: %d %q %s", code, stdout, errOut)
	}
	if stdout, _, code := td.runCLI("resume", rt.RuntimeID, "-o", "table"); code != 0 || !strings.HasPrefix(stdout, "resumed ") {
		t.Errorf("resume -o table: %d %q", code, stdout)
	}
	if _, errOut, code := td.runCLI("deny", rt.RuntimeID, "--reason", "x", "-o", "yaml"); code != 2 || !strings.Contains(errOut, "want json or table") {
		t.Errorf("deny -o yaml: %d %q", code, errOut)
	}

	for _, args := range [][]string{{"audit"}, {"events"}} {
		stdout, errOut, code := td.runCLI(args...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != 0 || len(lines) < 2 || !strings.Contains(lines[0], "SEQ") || !strings.Contains(lines[0], "TIME") {
			t.Errorf("%s: %d, no header\n%s%s", args[0], code, stdout, errOut)
		}
		for _, l := range lines {
			if strings.Contains(l, "{\"") || strings.Contains(l, "\":") {
				t.Errorf("%s: a raw JSON cell: %s", args[0], l)
			}
		}
	}
}
