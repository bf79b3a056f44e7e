package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// TestFoldedPasteTUI is the helper process of TestFoldedPasteSubmittedOnce (it does
// nothing unless NUDGE_FAKE_TUI is set): a Codex-like TUI that folds every bracketed
// paste into "[Pasted Content N chars]" and, like a TUI still busy taking in a large
// paste, takes the first Enter after a paste into the paste instead of submitting. Each
// submission is appended to $NUDGE_FAKE_TUI as "submitted N".
func TestFoldedPasteTUI(t *testing.T) {
	log := os.Getenv("NUDGE_FAKE_TUI")
	if log == "" {
		t.Skip("helper process")
	}
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin
	stty.Run()
	os.Stdout.WriteString("\x1b[?2004h")
	var (
		composer  []string // placeholders and typed text
		chars     int      // what the composer holds, in characters
		paste     []byte   // a bracketed paste being read
		inPaste   bool
		swallow   bool // the next Enter is taken into the paste
		submitted []string
		buf       = make([]byte, 64<<10)
		pending   []byte
	)
	draw := func() {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J  >_ Fake folding TUI\r\n\r\n")
		for _, s := range submitted {
			b.WriteString("• " + s + "\r\n\r\n")
		}
		if len(composer) == 0 {
			b.WriteString("› \x1b[2mAsk Codex to do anything\x1b[0m\r\n")
		} else {
			b.WriteString("› " + strings.Join(composer, "") + "\r\n")
		}
		b.WriteString("\r\n  fake-model default · ~/src\r\n  ← for agents · ? for shortcuts")
		os.Stdout.WriteString(b.String())
	}
	draw()
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			return
		}
		pending = append(pending, buf[:n]...)
		for len(pending) > 0 {
			switch {
			case inPaste:
				i := bytes.Index(pending, []byte("\x1b[201~"))
				if i < 0 {
					paste = append(paste, pending...)
					pending = pending[:0]
					continue
				}
				paste = append(paste, pending[:i]...)
				pending = pending[i+6:]
				inPaste = false
				k := utf8.RuneCount(paste)
				composer = append(composer, fmt.Sprintf("[Pasted Content %d chars]", k))
				chars += k
				paste, swallow = paste[:0], true
			case bytes.HasPrefix(pending, []byte("\x1b[200~")):
				pending, inPaste = pending[6:], true
			case bytes.HasPrefix(pending, []byte("\x1b")) && len(pending) < 6:
				pending = pending[:0] // a lone escape key: ignored
			case pending[0] == '\r' || pending[0] == '\n':
				pending = pending[1:]
				if swallow {
					swallow = false
					continue
				}
				if chars > 0 {
					submitted = append(submitted, fmt.Sprintf("submitted %d", chars))
					f, _ := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
					fmt.Fprintf(f, "submitted %d\n", chars)
					f.Close()
				}
				composer, chars = nil, 0
			default:
				r, size := utf8.DecodeRune(pending)
				pending = pending[size:]
				composer = append(composer, string(r))
				chars++
			}
		}
		draw()
	}
}

// TestFoldedPasteSubmittedOnce: an agent that shows nudge's large prompt folded into a
// paste placeholder, and takes the first Enter into the paste, still gets the prompt
// submitted, exactly once; the placeholder is never taken for a human's draft nor the
// prompt for submitted while it is still in the composer.
func TestFoldedPasteSubmittedOnce(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "submissions")
	// The codex profile launches only "codex": the fake is a script of that name.
	script := filepath.Join(dir, "codex")
	body := fmt.Sprintf("#!/bin/sh\nNUDGE_FAKE_TUI=%q exec %q -test.run='^TestFoldedPasteTUI$'\n", log, self)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	td := startDaemon(t, newTestConfig(t))
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "fold", Role: "dev", Agent: "codex", Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		t.Fatal(err)
	}
	rt = td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	prompt := strings.Repeat("a five kilobyte prompt on one line; ", 150)
	if _, err := td.trigger(map[string]any{"trigger_id": "fold-1", "workspace": "fold", "agent": "dev", "prompt": prompt}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTriggerFor("fold-1", 30*time.Second, func(t nudge.Trigger) bool {
		return t.State != "queued" && t.State != "injected" && t.State != "deferred"
	})
	screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID)
	if got.State != "submitted" && got.State != "acked" && !(got.State == "failed" && got.ErrorCode == "ACK_TIMEOUT") {
		t.Fatalf("fold-1: %s %s %s\nscreen:\n%s", got.State, got.ErrorCode, got.Message, screen)
	}
	var subs []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if subs, _ = os.ReadFile(log); len(subs) > 0 {
			break
		}
	}
	if n := bytes.Count(subs, []byte("submitted ")); n != 1 {
		t.Fatalf("the agent got the prompt %d times (want once): %q\nscreen:\n%s", n, subs, screen)
	}
	now := td.pollRuntimeFor(rt.RuntimeID)
	if now.OperatorBusy || now.InputLine == "draft" {
		t.Fatalf("the folded prompt read as a human's draft: operator_busy %v input_line %q\nscreen:\n%s", now.OperatorBusy, now.InputLine, screen)
	}
}

// pollRuntimeFor returns the runtime's record now.
func (td *testDaemon) pollRuntimeFor(id string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if err := td.c.do(t0(), "GET", "/v1/runtimes/"+id, nil, &rt); err != nil {
		td.t.Fatal(err)
	}
	return rt
}
