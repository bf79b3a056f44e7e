package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// quickStart returns the commands of the README's quick-start block, one argv each (the
// shell's word splitting: quotes, \-newline, comments, ~/, a trailing &).
func quickStart(t *testing.T, home string) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Quick start\n")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(rest, "\n```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no ```sh block under ## Quick start")
	}
	var cmds [][]string
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		if argv := shellWords(t, line, home); len(argv) > 0 {
			cmds = append(cmds, argv)
		}
	}
	return cmds
}

// shellWords splits one line as sh would for the quick start's needs.
func shellWords(t *testing.T, line, home string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '#' && !inWord:
			i = len(line)
		case c == '~' && !inWord && strings.HasPrefix(line[i:], "~/"):
			w.WriteString(home)
			inWord = true
		case strings.IndexByte("$`<>|;(){}*?", c) >= 0:
			t.Fatalf("quick start line %q uses %q: the test's word splitting does not", line, c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestQuickStartFromREADME runs the README's quick start as it stands (flags after
// arguments and all) against a daemon on a private tmux server whose launch word "nudge"
// is a nudge built from this tree, so that `--agent demo` runs the real demo agent: the
// receipts, the reply, the dialog and its answer, the stop. serve is the harness's daemon;
// attach and watch take over the terminal, so they are only parsed (--help); `mkdir -p`
// makes its directory.
func TestQuickStartFromREADME(t *testing.T) {
	cfg := newTestConfig(t)
	home := cfg.Panes.Roots[0]
	cfg.Panes.Self = buildWatchBinary(t)
	td := startDaemon(t, cfg)
	cmds := quickStart(t, home)
	if len(cmds) < 5 {
		t.Fatalf("quick start: %d commands", len(cmds))
	}
	ran := map[string]bool{}
	for _, argv := range cmds {
		if len(argv) == 3 && argv[0] == "mkdir" && argv[1] == "-p" && strings.HasPrefix(argv[2], home+"/") {
			if err := os.MkdirAll(argv[2], 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if argv[0] != "bin/nudge" && argv[0] != "nudge" {
			t.Fatalf("quick start line %q is not a nudge command", argv)
		}
		args := argv[1:]
		if n := len(args); n > 0 && args[n-1] == "&" {
			args = args[:n-1]
		}
		switch args[0] {
		case "serve":
			continue // the harness's daemon
		case "attach", "watch":
			args = append(args, "--help")
		}
		var out, errb bytes.Buffer
		env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
			if k == "NUDGE_SOCKET" {
				return td.cfg.Socket
			}
			return os.Getenv(k)
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		code := run(ctx, env, args)
		cancel()
		if code != 0 {
			t.Fatalf("nudge %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		t.Logf("nudge %s: %s", strings.Join(args, " "), firstLine(out.String()))
		ran[args[0]] = true
		switch args[0] {
		case "trigger":
			var tr struct{ State, Reply string }
			if err := json.Unmarshal(out.Bytes(), &tr); err != nil || tr.State != "acked" {
				t.Fatalf("the quick start's trigger: %v %s", err, out.String())
			}
		case "receipt":
			if !strings.HasPrefix(out.String(), "Approved") {
				t.Fatalf("the quick start's reply after the dialog: %q", out.String())
			}
		}
	}
	for _, c := range []string{"spawn", "trigger", "ls", "approve", "receipt", "tail", "audit", "pause", "stop"} {
		if !ran[c] {
			t.Errorf("the quick start no longer runs %s", c)
		}
	}
	if got := td.get("rt_demo.helper"); got.Status != "offline" {
		t.Errorf("after the quick start's stop: %s", got.Status)
	}
}
