package cli

import (
	"strings"
	"testing"
	"time"
)

func TestTailShowsRedactedOutputAndHistory(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("tl", "sh", "sh")
	secret := "sk-proj-abcdefghijklmnopqrstuvwx1234"
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "printf '\\033[31mRED-LINE\\033[0m\\nkey="+secret+"\\nTAIL-DONE\\n'")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	var tv tailView
	var out string
	for i := 0; i < 400; i++ {
		if err := td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID+"/tail?lines=50", nil, &tv); err != nil {
			t.Fatal(err)
		}
		if out = strings.Join(tv.Lines, "\n"); strings.Count(out, "TAIL-DONE") >= 2 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(out, "RED-LINE") || strings.Contains(out, "\x1b") {
		t.Fatalf("tail output not plain: %q", out)
	}
	if strings.Contains(out, secret) || !strings.Contains(out, "[REDACTED]") {
		t.Fatalf("secret not redacted: %q", out)
	}

	if _, _, code := td.runCLI("pause", rt.RuntimeID); code != 0 {
		t.Fatal("pause")
	}
	stdout, stderr, code := td.runCLI("tail", "--lines", "5", rt.RuntimeID)
	if code != 0 {
		t.Fatalf("tail: %d %s", code, stderr)
	}
	if !strings.Contains(stdout, "TAIL-DONE") || strings.Contains(stdout, secret) {
		t.Fatalf("tail output: %q", stdout)
	}
	hist := stdout[strings.Index(stdout, "history"):]
	if !strings.Contains(hist, "triggers_paused") {
		t.Fatalf("history lacks the pause: %q", hist)
	}
	if _, _, code := td.runCLI("tail", "rt_nope.x"); code != 1 {
		t.Fatalf("unknown runtime exit %d", code)
	}
	if _, _, code := td.runCLI("tail"); code != 2 {
		t.Fatalf("no args exit %d", code)
	}
}

// nudge's own tokens (a runtime token printed in the pane) are redacted in tail.
func TestTailRedactsNudgeTokens(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("tl", "sh", "sh")
	tok := procEnv(t, rt.PID)["NUDGE_RUNTIME_TOKEN"]
	if !strings.HasPrefix(tok, "nudge1.") {
		t.Fatalf("no runtime token in the pane: %q", tok)
	}
	td.tmux("send-keys", "-t", rt.PaneID, "-l", `printf 'T1 %s T2\n' "$NUDGE_RUNTIME_TOKEN"; echo TOK""DONE`)
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	var out string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		stdout, stderr, code := td.runCLI("tail", "--lines", "20", rt.RuntimeID)
		if code != 0 {
			t.Fatalf("tail: %d %s", code, stderr)
		}
		if out = stdout; strings.Contains(out, "TOKDONE") {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(out, "TOKDONE") || !strings.Contains(out, "T1 [REDACTED] T2") || strings.Contains(out, tok[len(tok)-20:]) {
		t.Fatalf("tail shows the token or never printed it:\n%s", out)
	}
}

// TestTailOfStoppedRuntime: nudge tail of a stopped runtime shows the last screen kept
// of its pane and says the pane is gone (before: 500 INTERNAL, capture-pane: can't find
// pane); nudge stop says what it is doing while it waits.
func TestTailOfStoppedRuntime(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("tl", "st", "sh")
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "echo LAST-WORDS-$((6*7))")
	td.tmux("send-keys", "-t", rt.PaneID, "Enter")
	readUntil(t, "", func(string) bool {
		var tv tailView
		td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID+"/tail?lines=20", nil, &tv)
		return strings.Contains(strings.Join(tv.Lines, "\n"), "LAST-WORDS-42")
	})
	_, stderr, code := td.runCLI("stop", rt.RuntimeID, "--reason", "done")
	if code != 0 || !strings.Contains(stderr, "stopping "+rt.RuntimeID) {
		t.Fatalf("stop: exit %d, stderr %q", code, stderr)
	}
	stdout, stderr, code := td.runCLI("tail", rt.RuntimeID, "--lines", "10")
	if code != 0 || !strings.Contains(stdout, "pane is gone") || !strings.Contains(stdout, "LAST-WORDS-42") {
		t.Fatalf("tail of a stopped runtime: exit %d\n%s%s", code, stdout, stderr)
	}
	var tv tailView
	if err := td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID+"/tail", nil, &tv); err != nil || !tv.PaneGone {
		t.Fatalf("GET tail of a stopped runtime: %+v %v", tv, err)
	}
}
