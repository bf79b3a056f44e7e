package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
)

// TestEnterTUI is the helper process of the repair Enter tests (it does nothing unless
// NUDGE_ENTER_TUI is set): a Codex-like TUI whose handling of Enter is one of two a
// loaded machine shows in the real CLIs, by NUDGE_ENTER_TUI_MODE:
//
//	late     it takes the prompt at the first Enter, draws once (its composer still
//	         showing the prompt) and then works for a while before it draws the empty
//	         composer. Keys that came meanwhile are read with the composer it had (Gemini
//	         CLI after a 63 KiB paste: a second Enter read before its redraw submits the
//	         prompt again).
//	swallow  it reads the first Enter and drops it, drawing its composer again with the
//	         prompt in it (an Enter taken while the TUI still read the paste as part of
//	         it); the next Enter submits.
//	slow     it reads a prompt's first keys, draws a word that is not the prompt, and
//	         then reads and draws nothing for slowEcho, longer than the echo timeout
//	         (Gemini CLI reading a 63 KiB paste on a loaded machine); then it draws the
//	         prompt in its composer and takes it at Enter.
//
// Each prompt it submits is logged ($NUDGE_ENTER_TUI/log: "submitted ID"; the file at-ID
// holds when, in unix nanoseconds), then drawn with its ack marker.
func TestEnterTUI(t *testing.T) {
	dir := os.Getenv("NUDGE_ENTER_TUI")
	if dir == "" {
		t.Skip("helper process")
	}
	mode := os.Getenv("NUDGE_ENTER_TUI_MODE")
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin
	stty.Run()
	logf := func(format string, a ...any) {
		f, _ := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		fmt.Fprintf(f, format+"\n", a...)
		f.Close()
	}
	in := make(chan []byte, 64)
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
		enters     int
	)
	idRE := regexp.MustCompile(`id=([A-Za-z0-9_.:-]+)`)
	draw := func() {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J  >_ Fake enter TUI\r\n\r\n")
		for _, s := range transcript {
			b.WriteString(s + "\r\n")
		}
		switch n := utf8.RuneCountInString(composer); {
		case n == 0:
			b.WriteString("› \x1b[2mAsk Codex to do anything\x1b[0m\r\n")
		case n > 200: // folded, as Codex shows a paste
			fmt.Fprintf(&b, "› [Pasted Content %d chars]\r\n", n)
		default:
			b.WriteString("› " + composer + "\r\n")
		}
		b.WriteString("\r\n  fake-model default · ~/src\r\n  ← for agents · ? for shortcuts")
		os.Stdout.WriteString(b.String())
	}
	took := func(prompt string) string { // logs a prompt given to the model
		id := "?"
		if m := idRE.FindStringSubmatch(prompt); m != nil {
			id = m[1]
		}
		logf("submitted %s", id)
		os.WriteFile(filepath.Join(dir, "at-"+id), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
		return id
	}
	done := func(prompt, id string) {
		composer = ""
		transcript = append(transcript, "› "+prompt[:min(len(prompt), 60)], "• ACK_TRIGGER:"+id)
		draw()
	}
	draw()
	var pending []byte
	for {
		chunk, ok := <-in
		if !ok {
			return
		}
		if mode == "slow" && composer == "" && len(pending) == 0 {
			os.Stdout.WriteString("\x1b[1;30H(reading)") // drawn at once, not the prompt
			time.Sleep(slowEcho)                         // reading the paste: nothing more drawn or read
			for more := true; more; {
				select {
				case b := <-in:
					chunk = append(chunk, b...)
				default:
					more = false
				}
			}
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
			enters++
			switch {
			case mode == "swallow" && enters == 1:
				draw() // read and dropped: the prompt stays
			case mode == "slow":
				draw() // the prompt, drawn at last
				time.Sleep(slowTake)
				done(composer, took(composer))
			case mode == "late":
				prompt := composer
				id := took(prompt)
				draw() // drawn once, the composer as it was
				time.Sleep(lateWork)
				for more := true; more; { // what came meanwhile is read with the old composer
					select {
					case b, ok := <-in:
						if !ok {
							return
						}
						for range strings.Count(string(b), "\r") + strings.Count(string(b), "\n") {
							took(prompt)
						}
					default:
						more = false
					}
				}
				done(prompt, id)
			default:
				done(composer, took(composer))
			}
		}
		draw() // the typing's echo
	}
}

// lateWork is how long the late TUI works after it took a prompt before it draws its
// empty composer: well past the pane's quiet after Enter (SubmitQuiet), well within the
// submit timeout the test gives the daemon.
const lateWork = 2 * time.Second

// slowEcho is how long the slow TUI reads a prompt before it draws it: past the echo
// timeout (2 s). slowTake is how long it shows it before it takes it.
const slowEcho, slowTake = 3 * time.Second, 300 * time.Millisecond

// startEnterTUI starts a daemon and one runtime running TestEnterTUI in mode, on the
// codex profile, and returns the daemon, the runtime and the TUI's directory (tuiLog).
func startEnterTUI(t *testing.T, mode string, submitTimeout time.Duration) (*testDaemon, runtimeView, string) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "codex") // the codex profile launches only "codex"
	body := fmt.Sprintf("#!/bin/sh\nNUDGE_ENTER_TUI=%q NUDGE_ENTER_TUI_MODE=%q exec %q -test.run='^TestEnterTUI$'\n", dir, mode, self)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := newTestConfig(t)
	cfg.Inject.AckTimeout = 5 * time.Minute // no retry: only the Enters of one attempt count
	cfg.Inject.SubmitTimeout = submitTimeout
	td := startDaemon(t, cfg)
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "enter", Role: "dev", Agent: "codex", Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		t.Fatal(err)
	}
	rt = td.waitRuntimeFor(rt.RuntimeID, 30*time.Second, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
	return td, rt, dir
}

// tuiLog is what TestEnterTUI logged in dir.
func tuiLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	return string(b)
}

// TestRepairEnterNeverResubmits: an agent that took the prompt at Enter, drew once and
// then works for seconds before it clears its composer must not get a repair Enter in
// that time: its screen still shows the prompt, but a second Enter would give it the
// prompt again. The prompt is submitted once, with no repair, and acked.
func TestRepairEnterNeverResubmits(t *testing.T) {
	td, rt, dir := startEnterTUI(t, "late", 30*time.Second)
	if _, err := td.trigger(map[string]any{"trigger_id": "late1", "workspace": "enter", "agent": "dev", "prompt": "the task"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTriggerFor("late1", time.Minute, func(t nudge.Trigger) bool { return t.Closed })
	if l := tuiLog(dir); l != "submitted late1\n" || got.State != nudge.StateAcked {
		t.Fatalf("late1 %s; the agent's log:\n%s\nstory: %s\nscreen:\n%s", got.State, l, story(td.audit("late1")), td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	for _, r := range td.audit("late1") {
		if strings.Contains(string(r.Detail), `"enter_repaired": true`) {
			t.Errorf("a repair Enter went to an agent that had taken the prompt: %s", story(td.audit("late1")))
		}
	}
}

// TestRepairEnterAfterSwallow: an Enter the agent read and dropped (its composer drawn
// again with the prompt) is repaired: the prompt is submitted once, the receipt says the
// Enter was repaired, and it is acked.
func TestRepairEnterAfterSwallow(t *testing.T) {
	td, rt, dir := startEnterTUI(t, "swallow", 3*time.Second)
	if _, err := td.trigger(map[string]any{"trigger_id": "sw1", "workspace": "enter", "agent": "dev", "prompt": "the task"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTriggerFor("sw1", time.Minute, func(t nudge.Trigger) bool { return t.Closed })
	if l := tuiLog(dir); l != "submitted sw1\n" || got.State != nudge.StateAcked {
		t.Fatalf("sw1 %s; the agent's log:\n%s\nstory: %s\nscreen:\n%s", got.State, l, story(td.audit("sw1")), td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	repaired := false
	for _, r := range td.audit("sw1") {
		repaired = repaired || r.Event == "trigger_submitted" && strings.Contains(string(r.Detail), `"enter_repaired": true`)
	}
	if !repaired {
		t.Errorf("the receipt does not say the Enter was repaired: %s", story(td.audit("sw1")))
	}
}

// TestEnterAfterSlowEcho: an agent that draws a pasted prompt only after the echo
// timeout (having drawn something else at once) gets Enter once its composer shows the
// prompt, not before (the Enter would be read with the paste and lost, and the empty
// composer read as the prompt having left it): the receipt says submitted only once the
// agent took the prompt, which it does once.
func TestEnterAfterSlowEcho(t *testing.T) {
	td, rt, dir := startEnterTUI(t, "slow", 30*time.Second)
	prompt := "the task " + strings.Repeat("word ", 200) // over 512 bytes: pasted
	if _, err := td.trigger(map[string]any{"trigger_id": "slow1", "workspace": "enter", "agent": "dev", "prompt": prompt}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTriggerFor("slow1", time.Minute, func(t nudge.Trigger) bool { return t.Closed })
	if l := tuiLog(dir); l != "submitted slow1\n" || got.State != nudge.StateAcked {
		t.Fatalf("slow1 %s; the agent's log:\n%s\nstory: %s\nscreen:\n%s", got.State, l, story(td.audit("slow1")), td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	b, err := os.ReadFile(filepath.Join(dir, "at-slow1"))
	took, _ := strconv.ParseInt(string(b), 10, 64)
	if err != nil || took == 0 {
		t.Fatalf("when the agent took slow1: %q, %v", b, err)
	}
	for _, r := range td.audit("slow1") {
		if r.Event == "trigger_submitted" && r.Time.Before(time.Unix(0, took)) {
			t.Errorf("slow1 submitted at %v, before the agent took it at %v: %s", r.Time, time.Unix(0, took), story(td.audit("slow1")))
		}
	}
}
