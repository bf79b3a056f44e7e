package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// geminiSetup gives the real Gemini CLI a private HOME pointed at a model stand-in
// that never answers (silentModel): the test's root folder trusted, a dummy API key the
// chosen sign-in, so it opens on its composer, and a prompt keeps it busy. The daemon
// runs as in a CI job (CI and GITHUB_ACTIONS "true", which turn Gemini CLI headless):
// the gemini profile's unset_env must keep them from Gemini.
func geminiSetup(t *testing.T) (daemon.Config, *standin.Server) {
	t.Helper()
	inCI(t)
	cfg, home := agentEnv(t, agentBinary(t, "gemini", "NUDGE_TEST_GEMINI", "@google/gemini-cli"))
	srv := silentModel(t, home, cfg.Panes.Roots[0], "gemini")
	cfg.Inject.DeferRecheck = 500 * time.Millisecond
	return cfg, srv
}

// TestGeminiTriggerSubmittedThenBusyDefers drives the real Gemini CLI: a trigger leaves
// its composer (submitted, nothing left typed), and while Gemini is busy with it (its
// model never answers: it keeps "Thinking…") the next trigger is not typed over it but
// deferred as the agent being BUSY, read from the real screen; the model got the first
// prompt once.
func TestGeminiTriggerSubmittedThenBusyDefers(t *testing.T) {
	cfg, model := geminiSetup(t)
	td := startDaemon(t, cfg)
	rt := td.spawnAgent("gm", "gemini", func(r runtimeView) bool {
		return r.Status == "failed" || r.Status == "ready" && r.Readiness == "READY"
	})
	if rt.Status == "failed" {
		pane := td.tmux("capture-pane", "-p", "-t", rt.PaneID)
		if strings.Contains(pane, "No input provided via stdin") {
			t.Fatalf("Gemini CLI ran headless (CI reached it) instead of opening its TUI:\n%s", pane)
		}
		// Seen once in a loaded CI dry run and never again: the CLI itself kept exiting at
		// start. That is Gemini's start, not what this test is about.
		t.Skipf("the Gemini CLI did not start (crash loop); its pane:\n%s", pane)
	}

	if _, err := td.trigger(map[string]any{"trigger_id": "gm-1", "workspace": "gm", "agent": "dev", "prompt": "say hello; it's \"quoted\" and $HOME"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("gm-1", func(t nudge.Trigger) bool { return t.SubmittedAt != nil || t.Closed })
	if got.SubmittedAt == nil {
		t.Fatalf("gm-1 not submitted: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-e", "-t", rt.PaneID))
	}
	td.composerEmpties(rt.PaneID, "gemini")
	// Gemini is now busy with gm-1.
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "BUSY" })
	if _, err := td.trigger(map[string]any{"trigger_id": "gm-2", "workspace": "gm", "agent": "dev", "prompt": "second task"}); err != nil {
		t.Fatal(err)
	}
	got = td.waitTrigger("gm-2", func(t nudge.Trigger) bool { return t.State != "queued" })
	if got.State != "deferred" || !strings.Contains(got.Message, "BUSY") {
		t.Fatalf("gm-2 while Gemini is busy: %+v\nscreen:\n%s", got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	if screen := td.tmux("capture-pane", "-p", "-t", rt.PaneID); strings.Contains(screen, "id=gm-2 ") {
		t.Fatalf("gm-2 was typed while Gemini was busy:\n%s", screen)
	}
	for deadline := time.Now().Add(30 * time.Second); standin.Count(model.Requests(), "gm-1") == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := standin.Count(model.Requests(), "gm-1"); n != 1 {
		t.Fatalf("the model got gm-1 %d times, want 1", n)
	}
}

// TestGeminiLargePasteGivenOnce: Gemini CLI takes a 63 KiB one-line paste out of its
// composer at Enter and then draws nothing (no prompt, no spinner) and calls no model for
// seconds (2 s on an idle 2-core machine, 14 s loaded, more than 30 s under heavier load) while it
// takes the text in. An ack timeout shorter than that used to retype the prompt into the
// silent pane, and Gemini, once it came back, ran it twice. The retry now waits for the
// pane to draw, and the ack wait starts again from there: the model gets the prompt once.
func TestGeminiLargePasteGivenOnce(t *testing.T) {
	inCI(t)
	ft := startFullTurns(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini,
		config: func(c *daemon.Config) {
			// A retry well within Gemini's silence (2 s on an idle 2-core machine).
			c.Inject.AckTimeout, c.Inject.Backoff = 500*time.Millisecond, []time.Duration{100 * time.Millisecond}
		}})
	ft.send("big", standin.Filler(63<<10, false))
	tr := ft.waitAcked("big")
	// Acked by its record: Gemini wrote the prompt as its user message, and may still be
	// reading it; the turn's end is when the model has had it.
	ft.td.c.do(t0(), "GET", "/v1/triggers/big?wait=2m&for=reply", nil, &tr)
	ft.waitReady("big")
	time.Sleep(3 * time.Second) // a second copy, queued in Gemini, would be sent by now
	if n := standin.Count(ft.srv.Requests(), "big"); n != 1 || tr.Attempts != 1 {
		t.Fatalf("the model got the prompt %d times (%d typings), want once\nstory: %s\nscreen:\n%s", n, tr.Attempts, story(ft.td.audit("big")), ft.screen())
	}
	t.Logf("63 KiB one-line prompt given once: %s", events(ft.td.audit("big")))
}

// inCI sets the variables of a CI job (GitHub Actions) for the test: the daemon, its tmux
// server and every agent started there see them unless a profile removes them.
func inCI(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("GITHUB_ACTIONS", "true")
}

// TestGeminiNextTriggerWaitsForIntake: after Enter, Gemini CLI takes a 63 KiB paste out
// of its composer and then draws nothing for seconds while it reads it; its screen reads
// READY meanwhile. A second trigger sent at once to the same pane must not be typed in
// that window (Gemini would queue it behind the paste and the receipt would call it
// submitted to an idle agent): it waits, deferred, until Gemini has shown that it took
// the first (here: until that turn reached the model), and then both are given once and
// both acked.
func TestGeminiNextTriggerWaitsForIntake(t *testing.T) {
	inCI(t)
	ft := startFullTurns(t, agentCase{agent: "gemini", env: "NUDGE_TEST_GEMINI", pkg: "@google/gemini-cli", api: standin.Gemini})
	sub := ft.td.d.Rooms().Events.Subscribe()
	defer ft.td.d.Rooms().Events.Unsubscribe(sub)
	stop, seen := make(chan struct{}, 1), make(chan bool, 1)
	defer close(stop)
	go func() { // the readiness shown while Gemini reads the paste
		taking := false
		defer func() { seen <- taking }()
		for {
			select {
			case ev := <-sub.C:
				taking = taking || ev.Type == "readiness" && strings.Contains(string(ev.Detail), "taking in the prompt of trigger big")
			case <-sub.Dropped:
				return
			case <-stop:
				return
			}
		}
	}()
	ft.send("big", standin.Filler(63<<10, false))
	ft.send("next", "the second task, sent right after the big one")
	first := ft.waitAcked("big")
	second := ft.waitAcked("next")
	ft.waitReady("next")
	reqs := ft.srv.Requests()
	var bigAt time.Time // when the model first got the big prompt's turn
	for _, r := range reqs {
		if ids := standin.EnvelopeIDs(r.Prompt); !r.Side && slices.Contains(ids, "big") {
			if slices.Contains(ids, "next") {
				t.Fatalf("the model got both prompts in one turn (next typed while Gemini was taking in big)\nstory big: %s\nstory next: %s",
					story(ft.td.audit("big")), story(ft.td.audit("next")))
			}
			bigAt = r.At
			break
		}
	}
	var typedAt time.Time // when next was first typed
	held := false         // deferred because Gemini was still reading big
	for _, r := range ft.td.audit("next") {
		held = held || r.Event == "trigger_deferred" && r.Code == nudge.AgentBusy && strings.Contains(r.Reason, "taking in trigger big")
		if r.Event == "trigger_sent" {
			typedAt = r.Time
			break
		}
	}
	if bigAt.IsZero() || typedAt.IsZero() || !typedAt.After(bigAt) {
		t.Fatalf("next was typed (%v) before Gemini had taken big (its turn reached the model at %v)\nstory big: %s\nstory next: %s\nscreen:\n%s",
			typedAt, bigAt, story(ft.td.audit("big")), story(ft.td.audit("next")), ft.screen())
	}
	if !held {
		t.Errorf("next's receipt never said it waited for Gemini to take in big\nstory next: %s", story(ft.td.audit("next")))
	}
	if second.QueuedInAgent {
		t.Errorf("next was queued in Gemini, not typed into an agent that had taken big: %+v", second)
	}
	stop <- struct{}{}
	if !<-seen {
		t.Errorf("no readiness event said Gemini was taking in big's prompt")
	}
	for _, tr := range []nudge.Trigger{first, second} {
		if n := standin.Count(reqs, tr.TriggerID); n != 1 || tr.Attempts != 1 {
			t.Errorf("%s: the model got the prompt %d times (%d typings), want once\nstory: %s", tr.TriggerID, n, tr.Attempts, story(ft.td.audit(tr.TriggerID)))
		}
	}
	for _, r := range ft.td.audit("next") {
		t.Logf("next: %s %s %s", r.Event, r.Code, r.Reason)
	}
}
