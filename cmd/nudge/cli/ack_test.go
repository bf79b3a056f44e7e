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

// fakeAgent is a small agent: it reads lines from its tty and, by mode, acknowledges
// each trigger with the marker in one write, in three writes, or not at all.
const fakeAgent = `
mode=$1
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*\[BRIDGE_TRIGGER id=\([^ ]*\) .*/\1/p')
  [ -n "$id" ] || continue
  case $mode in
    one) printf 'working on it\nACK_TRIGGER:%s\n' "$id" ;;
    three) printf 'ACK_'; sleep 0.1; printf '\033[1mTRIG\033[0mGER'; sleep 0.1; printf ':%s\n' "$id" ;;
    *) : ;;
  esac
done
`

// fakeResume stands in for an agent's launch and resume commands: it records its argv,
// then (or fails, if the FAIL file exists) runs as the agent that acknowledges each
// trigger typed into it (the prompt is never on its command line), or, if the DEAF file
// exists, stays up reading nothing.
const fakeResume = `
printf '%s\n' "$@" >> "$0.calls"
[ "$1" = resume ] && [ -e "$0.fail" ] && exit 1
[ -e "$0.deaf" ] && exec sleep 600
exec sh "${0%/*}/agent.sh" one
`

// ackSetup starts a daemon with a "fake" profile whose agent must acknowledge.
func ackSetup(t *testing.T, tweak func(*daemon.Config)) (*testDaemon, string) {
	t.Helper()
	cfg := newTestConfig(t)
	root := cfg.Panes.Roots[0]
	agent := filepath.Join(root, "agent.sh")
	resume := filepath.Join(root, "resume.sh")
	os.WriteFile(agent, []byte(fakeAgent), 0o755)
	os.WriteFile(resume, []byte(fakeResume), 0o755)
	prof := map[string]any{
		"name": "fake", "launch": []string{"sh", resume, "fresh"}, "allowed_launchers": []string{"sh"},
		"prompt_arg": "append", "resume": []string{"sh", resume, "resume", "{session_id}", "{prompt}"},
		"pack": "shell", "submit_settle": "20ms", "queues_input": true,
		"ack_signals": []string{"marker", "api", "heartbeat", "cursor"}, "submitted_is_ack": false,
	}
	cfg.ProfileDir = t.TempDir()
	b, _ := json.Marshal(prof)
	os.WriteFile(filepath.Join(cfg.ProfileDir, "fake.json"), b, 0o644)
	cfg.Inject.AckTimeout, cfg.Inject.AckRetries = 1500*time.Millisecond, 2
	cfg.Inject.Backoff = []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	return startDaemon(t, cfg), resume
}

func (td *testDaemon) spawnFake(role, mode string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: role, Agent: "fake", Dir: td.cfg.Panes.Roots[0], SessionID: "sess-" + role,
		Argv: []string{"sh", filepath.Join(td.cfg.Panes.Roots[0], "agent.sh"), mode}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		td.t.Fatalf("spawn: %v", err)
	}
	return td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
}

func (td *testDaemon) audit(trigger string) []nudge.AuditRecord {
	var recs []nudge.AuditRecord
	if err := td.c.do(t0(), "GET", "/v1/audit?trigger="+trigger, nil, &recs); err != nil {
		td.t.Fatal(err)
	}
	return recs
}

func events(recs []nudge.AuditRecord) string {
	var s []string
	for _, r := range recs {
		s = append(s, r.Event)
	}
	return strings.Join(s, " ")
}

func TestAckMarkerOneChunkAndSplit(t *testing.T) {
	td, _ := ackSetup(t, nil)
	td.spawnFake("one", "one")
	td.spawnFake("three", "three")
	for _, role := range []string{"one", "three"} {
		id := "m-" + role
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": role, "prompt": "do the thing"}); err != nil {
			t.Fatal(err)
		}
		got := td.waitTrigger(id, closed)
		if got.State != "acked" || got.AckSignal != "marker" || got.Attempts != 1 {
			t.Fatalf("%s: %+v", role, got)
		}
	}
}

func TestAckEchoNeverAcksAPIAndHeartbeatDo(t *testing.T) {
	td, _ := ackSetup(t, func(c *daemon.Config) { c.Inject.AckTimeout = 20 * time.Second })
	rt := td.spawnFake("quiet", "none")
	// The echo of the envelope (it names the marker word) must not ack it.
	if _, err := td.trigger(map[string]any{"trigger_id": "e1", "workspace": "w1", "agent": "quiet", "prompt": "ACK please"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("e1", func(t nudge.Trigger) bool { return t.State == "submitted" })
	time.Sleep(500 * time.Millisecond)
	if got = td.waitTrigger("e1", func(nudge.Trigger) bool { return true }); got.State != "submitted" {
		t.Fatalf("echo acked it: %+v", got)
	}
	var acked nudge.Trigger
	if err := td.c.do(t0(), "POST", "/v1/triggers/e1/ack", nil, &acked); err != nil {
		t.Fatal(err)
	}
	if acked.State != "acked" || acked.AckSignal != "api" {
		t.Fatalf("api ack: %+v", acked)
	}
	// A heartbeat after delivery acks the next one; a cursor advance acks as cursor.
	td.trigger(map[string]any{"trigger_id": "h1", "workspace": "w1", "agent": "quiet", "prompt": "next"})
	td.waitTrigger("h1", func(t nudge.Trigger) bool { return t.State == "submitted" })
	time.Sleep(50 * time.Millisecond)
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", heartbeatBody{Status: "active"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("h1", closed); got.AckSignal != "heartbeat" {
		t.Fatalf("heartbeat ack: %+v", got)
	}
	td.trigger(map[string]any{"trigger_id": "c1", "workspace": "w1", "agent": "quiet", "prompt": "third"})
	td.waitTrigger("c1", func(t nudge.Trigger) bool { return t.State == "submitted" })
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", map[string]any{"cursor": "msg-42", "last_activity_at": time.Now().Add(-time.Hour)}, nil); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("c1", closed); got.AckSignal != "cursor" {
		t.Fatalf("cursor ack: %+v", got)
	}
}

func TestAckTimeoutRetriesThenResume(t *testing.T) {
	td, resume := ackSetup(t, nil)
	td.spawnFake("slow", "none")
	td.trigger(map[string]any{"trigger_id": "r1", "workspace": "w1", "agent": "slow", "thread_id": "th1", "prompt": "wake up"})
	got := td.waitTrigger("r1", closed)
	// The resume reopens the session without the prompt; the prompt is typed into the
	// resumed agent, which acks it (a fourth typing).
	if got.Fallback != "resume" || got.State != "acked" || got.ErrorCode != "ACK_TIMEOUT" || got.Attempts != 4 {
		t.Fatalf("receipt: %+v", got)
	}
	recs := td.audit("r1")
	story := events(recs)
	for _, want := range []string{"trigger_received", "trigger_sent", "trigger_submitted", "trigger_retry", "fallback_required", "fallback_resume_started", "fallback_resume_succeeded", "fallback_deliver_live", "ack_received"} {
		if !strings.Contains(story, want) {
			t.Fatalf("audit story lacks %s:\n%s", want, story)
		}
	}
	var backoffs []int64
	for _, r := range recs {
		if r.Event == "trigger_retry" {
			var d struct {
				BackoffMS int64 `json:"backoff_ms"`
			}
			json.Unmarshal(r.Detail, &d)
			backoffs = append(backoffs, d.BackoffMS)
		}
	}
	if len(backoffs) != 2 || backoffs[0] != 200 || backoffs[1] != 400 {
		t.Fatalf("backoffs %v, want [200 400]", backoffs)
	}
	calls, _ := os.ReadFile(resume + ".calls")
	if !strings.Contains(string(calls), "resume\nsess-slow\n") || strings.Contains(string(calls), "wake up") {
		t.Fatalf("resume argv (want the session, never the prompt):\n%s", calls)
	}
}

func TestResumeFailingTwiceSpawns(t *testing.T) {
	td, resume := ackSetup(t, nil)
	td.spawnFake("dead", "none")
	os.WriteFile(resume+".fail", nil, 0o644)
	td.trigger(map[string]any{"trigger_id": "f1", "workspace": "w1", "agent": "dead", "prompt": "wake"})
	// The fresh spawn runs the same script with "fresh": only resumes fail.
	got := td.waitTrigger("f1", closed)
	story := events(td.audit("f1"))
	if got.Fallback != "spawn" || strings.Count(story, "fallback_resume_started") != 2 || !strings.Contains(story, "fallback_spawn_succeeded") {
		t.Fatalf("receipt %+v\nstory %s", got, story)
	}
}

func TestCrashLoopSpawnsDirectly(t *testing.T) {
	td, resume := ackSetup(t, func(c *daemon.Config) { c.Panes.CrashLoopFailures = 3 })
	// An agent that dies at once: the registry restarts it until the crash loop marks it
	// failed; a trigger then skips resume and spawns fresh.
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "crashy", Agent: "fake", Dir: td.cfg.Panes.Roots[0], SessionID: "sess-crashy",
		Argv: []string{"sh", "-c", "exit 7"}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "failed" })
	td.trigger(map[string]any{"trigger_id": "cl1", "workspace": "w1", "agent": "crashy", "prompt": "are you there"})
	got := td.waitTrigger("cl1", closed)
	story := events(td.audit("cl1"))
	if got.Fallback != "spawn" || got.ErrorCode != "PANE_DEAD" || strings.Contains(story, "fallback_resume_started") ||
		!strings.Contains(story, "fallback_resume_skipped") || !strings.Contains(story, "fallback_spawn_succeeded") {
		t.Fatalf("receipt %+v\nstory %s", got, story)
	}
	calls, _ := os.ReadFile(resume + ".calls")
	if !strings.Contains(string(calls), "fresh\n") || strings.Contains(string(calls), "are you there") {
		t.Fatalf("spawn argv (want the fresh launch, never the prompt):\n%s", calls)
	}
	if got.State != "acked" || !strings.Contains(story, "fallback_deliver_live") {
		t.Fatalf("the prompt was not delivered to the fresh agent: %+v\nstory %s", got, story)
	}
}

func TestUnmanagedRuntimeGoesStraightToFallback(t *testing.T) {
	td, resume := ackSetup(t, nil)
	rt := td.spawnFake("adopted", "none")
	// Re-register the same pane as unmanaged under another role.
	var un runtimeView
	if err := td.c.do(t0(), "DELETE", "/v1/runtimes/"+rt.RuntimeID+"?reason=test", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/register", registerBody{Workspace: "w1", Role: "adopted", Agent: "fake",
		Target: rt.PaneID, SessionID: "sess-un", Unmanaged: true}, &un); err != nil {
		t.Fatal(err)
	}
	td.trigger(map[string]any{"trigger_id": "u1", "workspace": "w1", "agent": "adopted", "prompt": "hello"})
	got := td.waitTrigger("u1", closed)
	recs := td.audit("u1")
	story := events(recs)
	// The operator's pane was not touched: the session was resumed by a runtime beside
	// it, and the prompt typed there.
	aside := td.asideRuntimes("adopted")
	if got.ErrorCode != "UNMANAGED_RUNTIME" || got.Fallback != "resume" || got.State != "acked" || len(aside) != 1 ||
		got.FallbackRuntimeID != aside[0].RuntimeID || got.FallbackPane != aside[0].PaneID || got.FallbackPane == un.PaneID {
		t.Fatalf("receipt %+v\naside %+v\nstory %s", got, aside, story)
	}
	for _, r := range recs {
		if r.Event == "trigger_sent" && r.RuntimeID != aside[0].RuntimeID {
			t.Fatalf("typed into %s, not the runtime beside the unmanaged pane: %s", r.RuntimeID, r.Detail)
		}
	}
	calls, _ := os.ReadFile(resume + ".calls")
	if !strings.Contains(string(calls), "resume\nsess-un\n") || strings.Contains(string(calls), "hello") {
		t.Fatalf("resume argv (want the session, never the prompt):\n%s", calls)
	}
}

// TestSpawnWithoutPromptArgDeliversLive: the shell profile takes no prompt at launch, so
// its fallback spawn starts a fresh shell without it. The receipt must not claim the
// spawn delivered the prompt: the trigger is typed into the fresh runtime live instead.
func TestSpawnWithoutPromptArgDeliversLive(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Panes.CrashLoopFailures = 3
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "dies", Agent: "shell", Dir: td.cfg.Panes.Roots[0], Argv: []string{"sh", "-c", "exit 7"}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "failed" })
	if _, err := td.trigger(map[string]any{"trigger_id": "live1", "workspace": "w1", "agent": "dies", "prompt": "typed into the fresh shell"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("live1", closed)
	story := events(td.audit("live1"))
	if got.Fallback != "spawn" || got.DeliveryBackend != "tmux" || (got.State != "acked" && got.State != "submitted") ||
		!strings.Contains(story, "fallback_deliver_live") || !strings.Contains(story, "trigger_sent") {
		t.Fatalf("receipt %+v\nstory %s", got, story)
	}
	cur := td.get(rt.RuntimeID)
	td.waitPane(cur.PaneID, "the envelope in the fresh shell", func(s string) bool {
		return strings.Contains(s, "[BRIDGE_TRIGGER id=live1 ") && strings.Contains(s, "typed into the fresh")
	})
}
