package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// Issue 12 item 3: every hold ends. An agent that does not queue input and is busy, in a
// confirmation dialog or on a screen nudge does not understand holds a trigger with a
// code and a deferred_until; at the deadline the trigger ends in DEFER_TIMEOUT with the
// last screen lines as evidence, and nothing was typed into the dialog.

// strictLauncher stands in for the strict agent's fallback launches: it records its
// argv, then shows a prompt and reads what is typed (the fallback's prompt, typed live:
// never on its argv) into $0.typed.
const strictLauncher = `printf '%s\n' "$@" >> "$0.calls"; printf '$ '; exec cat >> "$0.typed"`

// strictSetup starts a daemon with a "strict" profile: the shell pack, no input queue
// (a busy or unknown screen holds triggers), prompts given at launch.
func strictSetup(t *testing.T, tweak func(*daemon.Config)) (*testDaemon, string) {
	t.Helper()
	cfg := newTestConfig(t)
	root := cfg.Panes.Roots[0]
	launcher := filepath.Join(root, "strict.sh")
	if err := os.WriteFile(launcher, []byte(strictLauncher), 0o755); err != nil {
		t.Fatal(err)
	}
	prof := map[string]any{
		"name": "strict", "launch": []string{"sh", launcher}, "allowed_launchers": []string{"sh"},
		"prompt_arg": "append", "resume": []string{}, "pack": "shell", "submit_settle": "20ms",
		"queues_input": false, "ack_signals": []string{"marker", "api"}, "submitted_is_ack": true,
		"ready_quiet": "200ms",
	}
	cfg.ProfileDir = t.TempDir()
	b, _ := json.Marshal(prof)
	if err := os.WriteFile(filepath.Join(cfg.ProfileDir, "strict.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Inject.MaxHold = 3 * time.Second
	cfg.Inject.DeferRecheck = 500 * time.Millisecond
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	return startDaemon(t, cfg), launcher
}

func (td *testDaemon) spawnStrict(role string, argv ...string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: role, Agent: "strict", Dir: td.cfg.Panes.Roots[0], Argv: argv}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		td.t.Fatalf("spawn: %v", err)
	}
	return td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
}

func TestHoldEveryAgentStateEndsWithDeferTimeout(t *testing.T) {
	td, launcher := strictSetup(t, nil)
	answer := filepath.Join(td.cfg.Panes.Roots[0], "dialog.answer")
	cases := []struct {
		role, readiness, code, screen string
		argv                          []string
	}{
		{"busy", "BUSY", "AGENT_BUSY", "48% fetching",
			[]string{"sh", "-c", `sleep 1; printf '[#####.....] 48%% fetching\n'; exec sleep 600`}},
		{"confirm", "NEEDS_CONFIRMATION", "AGENT_NEEDS_CONFIRMATION", "remove build? (y/N)",
			[]string{"sh", "-c", `sleep 1; printf 'remove build? (y/N) '; read a; printf '%s' "$a" > ` + answer + `; exec sleep 600`}},
		{"blank", "UNKNOWN", "AGENT_UNKNOWN", "",
			[]string{"sh", "-c", "exec sleep 600"}},
	}
	for _, c := range cases {
		rt := td.spawnStrict(c.role, c.argv...)
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return string(r.Readiness) == c.readiness })
	}
	for _, c := range cases {
		id := "h-" + c.role
		held, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": c.role,
			"prompt": "never typed into " + c.role})
		if err != nil {
			t.Fatal(err)
		}
		if held.State != "deferred" {
			held = td.waitTrigger(id, func(t nudge.Trigger) bool { return t.State == "deferred" || t.Closed })
		}
		if held.State != "deferred" || string(held.ErrorCode) != c.code || held.DeferredUntil == nil || held.Result != "deferred" {
			t.Fatalf("%s: held without its code or deadline: %+v", c.role, held)
		}
		if d := held.DeferredUntil.Sub(*held.DeferredAt); d <= 0 || d > 3*time.Second+time.Second {
			t.Fatalf("%s: deferred_until %v is not the hold deadline after %v", c.role, held.DeferredUntil, held.DeferredAt)
		}
	}
	for _, c := range cases {
		id := "h-" + c.role
		got := td.waitTrigger(id, closed)
		// The fallback spawns a runtime beside the held one and types the prompt there
		// (one attempt): never into the held one. It was delivered there (the fallback
		// named): not timeout, which would have an orchestrator resume it a second time.
		if got.ErrorCode != "DEFER_TIMEOUT" || got.Result != "delivered" || got.Fallback != "spawn" || !strings.Contains(got.Message, "past the max hold") ||
			!strings.Contains(got.Message, c.screen) || got.Attempts > 1 || !strings.HasPrefix(got.RuntimeID, "rt_w1."+c.role+"-fb-") {
			t.Fatalf("%s: receipt after the deadline: %+v", c.role, got)
		}
		recs := td.audit(id)
		if !strings.Contains(events(recs), "trigger_deferred") {
			t.Fatalf("%s: audit %s", c.role, events(recs))
		}
		for _, r := range recs {
			if r.Event == "trigger_sent" && r.RuntimeID != got.RuntimeID {
				t.Fatalf("%s: typed into %s, the held runtime", c.role, r.RuntimeID)
			}
		}
		waitFile(t, launcher+".typed", "[BRIDGE_TRIGGER id="+id+" ", 20*time.Second)
	}
	if calls, _ := os.ReadFile(launcher + ".calls"); strings.Contains(string(calls), "never typed") {
		t.Fatalf("a prompt on a fallback launch's argv:\n%s", calls)
	}
	if b, err := os.ReadFile(answer); err == nil {
		t.Fatalf("the confirmation dialog got %q", b)
	}
}

// A forced trigger is the one thing typed into a confirmation dialog.
func TestHoldConfirmationTypedOnlyWhenForced(t *testing.T) {
	td, _ := strictSetup(t, func(c *daemon.Config) { c.Inject.MaxHold = 10 * time.Minute })
	answer := filepath.Join(td.cfg.Panes.Roots[0], "dialog.answer")
	rt := td.spawnStrict("confirm", "sh", "-c", `sleep 1; printf 'remove build? (y/N) '; read a; printf '%s' "$a" > `+answer+`; exec sleep 600`)
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Readiness == "NEEDS_CONFIRMATION" })
	if _, err := td.trigger(map[string]any{"trigger_id": "f1", "workspace": "w1", "agent": "confirm", "prompt": "yes"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("f1", func(t nudge.Trigger) bool { return t.ErrorCode == "AGENT_NEEDS_CONFIRMATION" })
	if _, err := os.Stat(answer); err == nil {
		t.Fatal("typed into the dialog before the force")
	}
	if err := td.c.do(t0(), "POST", "/v1/triggers/f1/force", forceBody{Reason: "answer it"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("f1", closed); got.State != "acked" {
		t.Fatalf("forced: %+v", got)
	}
	waitFile(t, answer, "[BRIDGE_TRIGGER id=f1", 20*time.Second)
}

// A paused runtime holds a trigger until the max hold, then fails it: no fallback
// launches an agent in the paused one's stead.
func TestHoldPausedRuntimeEndsFailed(t *testing.T) {
	td, _ := strictSetup(t, func(c *daemon.Config) { c.Inject.MaxHold = 2 * time.Second })
	rt := td.spawnShell("w1", "idle", "sh", "-c", "exec cat")
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/pause", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "p1", "workspace": "w1", "agent": "idle", "prompt": "wait"}); err != nil {
		t.Fatal(err)
	}
	held := td.waitTrigger("p1", func(t nudge.Trigger) bool { return t.State != "queued" })
	if held.ErrorCode != "RUNTIME_PAUSED" || held.DeferredUntil == nil {
		t.Fatalf("held: %+v", held)
	}
	got := td.waitTrigger("p1", closed)
	if got.State != "failed" || got.ErrorCode != "DEFER_TIMEOUT" || got.Fallback != "" || got.Attempts != 0 {
		t.Fatalf("after the max hold: %+v", got)
	}
}
