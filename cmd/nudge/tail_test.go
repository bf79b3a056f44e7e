package main

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
