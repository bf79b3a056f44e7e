package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestSlowIntakeTUI is the helper process of TestSlowIntakeNextTriggerWaits (it does
// nothing unless NUDGE_SLOW_TUI is set): a Codex-like TUI that, like Gemini CLI with a
// large paste, takes a prompt out of its composer at Enter, draws the empty composer and
// then nothing at all while it "reads" the prompt: until the file go-N appears in
// $NUDGE_SLOW_TUI (N: the prompt's number). Then it draws the prompt, its busy line and
// the prompt's ack marker, and is idle again. Its log ($NUDGE_SLOW_TUI/log) says what
// it did, and any text typed while it was reading.
func TestSlowIntakeTUI(t *testing.T) {
	dir := os.Getenv("NUDGE_SLOW_TUI")
	if dir == "" {
		t.Skip("helper process")
	}
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin
	stty.Run()
	logf := func(format string, a ...any) {
		f, _ := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		fmt.Fprintf(f, format+"\n", a...)
		f.Close()
	}
	in := make(chan []byte)
	go func() {
		for {
			buf := make([]byte, 4096)
			n, err := os.Stdin.Read(buf)
			if err != nil {
				close(in)
				return
			}
			in <- buf[:n]
		}
	}()
	var (
		composer   string
		transcript []string
		pending    []byte
		n          int
	)
	idRE := regexp.MustCompile(`id=([A-Za-z0-9_.:-]+)`)
	draw := func(busy string) {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J  >_ Fake slow TUI\r\n\r\n")
		for _, s := range transcript {
			b.WriteString(s + "\r\n")
		}
		if busy != "" {
			b.WriteString(busy + "\r\n\r\n")
		}
		if composer == "" {
			b.WriteString("› \x1b[2mAsk Codex to do anything\x1b[0m\r\n")
		} else {
			b.WriteString("› " + composer + "\r\n")
		}
		b.WriteString("\r\n  fake-model default · ~/src\r\n  ← for agents · ? for shortcuts")
		os.Stdout.WriteString(b.String())
	}
	draw("")
	for {
		chunk, ok := <-in
		if !ok {
			return
		}
		pending = append(pending, chunk...)
		pending = []byte(strings.NewReplacer("\x1b[200~", "", "\x1b[201~", "").Replace(string(pending)))
		for len(pending) > 0 {
			c := pending[0]
			pending = pending[1:]
			if c != '\r' && c != '\n' {
				composer += string(c)
				continue
			}
			if composer == "" {
				continue
			}
			n++
			id := "?"
			if m := idRE.FindStringSubmatch(composer); m != nil {
				id = m[1]
			}
			logf("submitted %s", id)
			prompt := composer
			composer = ""
			draw("") // the composer is empty; now nothing while it reads the prompt
			for {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("go-%d", n))); err == nil {
					break
				}
				select {
				case more, ok := <-in:
					if !ok {
						return
					}
					if strings.Trim(string(more), "\r\n") != "" { // not only a (repair) Enter
						logf("typed while reading %s: %q", id, more)
					}
					pending = append(pending, more...)
				case <-time.After(20 * time.Millisecond):
				}
			}
			logf("drew %s", id)
			transcript = append(transcript, "› "+prompt[:min(len(prompt), 60)])
			draw("• Working (0s • esc to interrupt)")
			transcript = append(transcript, "• ACK_TRIGGER:"+id)
			draw("")
		}
		draw("")
	}
}

// TestSlowIntakeNextTriggerWaits: an agent that takes a prompt out of its composer and
// then shows nothing for a while (here a Codex-like fake on the codex profile, which
// queues input while busy) reads READY on screen; the next trigger is not typed into it
// until it has shown it took the first. It waits deferred as AGENT_BUSY naming the
// prompt the agent is reading, the runtime reads BUSY meanwhile, the agent gets no
// input while it reads, and then both triggers are given once, in order, and acked.
func TestSlowIntakeNextTriggerWaits(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "codex") // the codex profile launches only "codex"
	body := fmt.Sprintf("#!/bin/sh\nNUDGE_SLOW_TUI=%q exec %q -test.run='^TestSlowIntakeTUI$'\n", dir, self)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := newTestConfig(t)
	cfg.Inject.AckTimeout = 5 * time.Minute // the fake acks only once the test lets it draw
	cfg.Inject.DeferRecheck = 200 * time.Millisecond
	td := startDaemon(t, cfg)
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "slow", Role: "dev", Agent: "codex", Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		t.Fatal(err)
	}
	rt = td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	log := func() string { b, _ := os.ReadFile(filepath.Join(dir, "log")); return string(b) }

	if _, err := td.trigger(map[string]any{"trigger_id": "s1", "workspace": "slow", "agent": "dev", "prompt": "first"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTriggerFor("s1", 30*time.Second, func(t nudge.Trigger) bool { return t.SubmittedAt != nil || t.Closed }); got.SubmittedAt == nil {
		t.Fatalf("s1 not submitted: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "s2", "workspace": "slow", "agent": "dev", "prompt": "second"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTriggerFor("s2", 30*time.Second, func(t nudge.Trigger) bool { return t.State != "queued" })
	if got.State != "deferred" || got.ErrorCode != nudge.AgentBusy || !strings.Contains(got.Message, "taking in trigger s1") {
		t.Fatalf("s2 while the agent reads s1: %+v\nlog:\n%s\nscreen:\n%s", got, log(), td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	now := td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.Readiness == "BUSY" && strings.Contains(r.Summary, "s1") })
	t.Logf("while the agent reads s1: s2 %s %s (%s); runtime %s (%s)", got.State, got.ErrorCode, got.Message, now.Readiness, now.Summary)

	for _, f := range []string{"go-1", "go-2"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s1", "s2"} {
		if got := td.waitTriggerFor(id, time.Minute, func(t nudge.Trigger) bool { return t.Closed }); got.State != "acked" || got.Attempts != 1 {
			t.Fatalf("%s: %+v\nstory: %s\nlog:\n%s", id, got, story(td.audit(id)), log())
		}
	}
	// (A repair Enter of s1's, on a machine too loaded for the fake to draw its empty
	// composer in time, may come while it reads: only text typed then counts.)
	if l := log(); strings.Contains(l, "typed while reading") || !strings.HasPrefix(l, "submitted s1\ndrew s1\nsubmitted s2\n") {
		t.Fatalf("the agent's log:\n%s", l)
	}
}
