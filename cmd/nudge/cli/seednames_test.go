package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// TestSeedAPINames: the seeds' field names (seed 000 §10.1/10.2: workspace_id, agent_id,
// pty_backend, pty_target, pid) are accepted, a runtime is addressed by its agent_id, and
// a heartbeat that advances the read cursor lifts the loop guard of triggers that named
// the runtime by agent_id (before: 400 for every seed name, and the guard, keyed by the
// name the triggers used, never lifted). Unknown fields are still refused.
func TestSeedAPINames(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Inject.LoopRepeats = 2
	td := startDaemon(t, cfg)
	file := filepath.Join(td.cfg.Panes.Roots[0], "rev.bytes")
	var rt runtimeView
	err := td.c.do(t0(), "POST", "/v1/runtimes", map[string]any{"workspace_id": "w1", "role": "rev", "agent": "shell",
		"agent_id": "reviewer_agent", "dir": td.cfg.Panes.Roots[0], "argv": []string{"sh", "-c", "stty raw; exec cat > " + file}}, &rt)
	if err != nil {
		t.Fatalf("spawn with workspace_id: %v", err)
	}
	ready := td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	// The runtime record by the seeds' names too (seed 000 §10.1 pty_backend, pty_target;
	// seed 001 §7.1 tmux_target), in the API and in nudge ls -o json (issue 36 item 8).
	var raw map[string]any
	if err := td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["pty_backend"] != "tmux" || raw["pty_target"] != ready.Target || raw["tmux_target"] != ready.Target || ready.Target == "" {
		t.Fatalf("runtime record without the seeds' names: pty_backend %v, pty_target %v, tmux_target %v (target %q)",
			raw["pty_backend"], raw["pty_target"], raw["tmux_target"], ready.Target)
	}
	readUntil(t, file, func(string) bool { _, err := os.Stat(file); return err == nil })

	send := func(id, prompt string) nudge.Trigger {
		t.Helper()
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace_id": "w1", "agent_id": "reviewer_agent",
			"thread_id": "th-seed", "prompt": prompt, "ack_timeout_ms": 8000}); err != nil {
			t.Fatalf("trigger %s by agent_id: %v", id, err)
		}
		return td.waitTrigger(id, func(t nudge.Trigger) bool { return t.Closed || t.State == "deferred" })
	}
	for _, id := range []string{"s1", "s2"} {
		if got := send(id, "the same finding"); got.State != "acked" || got.RuntimeID != rt.RuntimeID {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	if got := send("s3", "the same finding"); got.ErrorCode != nudge.ThreadAutoBlocked {
		t.Fatalf("s3, a third repeat: %+v (want THREAD_AUTO_BLOCKED)", got)
	}
	var hb api.HeartbeatReply
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat",
		map[string]any{"status": "active", "cursor": "msg-7", "thread_id": "th-seed"}, &hb); err != nil || !hb.CursorAdvanced {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	if got := send("s4", "progress was made"); got.State != "acked" {
		t.Fatalf("after the heartbeat's progress: %+v (the loop guard did not lift)", got)
	}
	readUntil(t, file, func(s string) bool { return strings.Contains(s, "progress was made") })

	// Register by the seed's names: pty_target, pty_backend, pid (the pane's own).
	other := td.spawnShell("w1", "tmp", "sh", "-c", "exec sleep 600")
	var stopped runtimeView
	td.c.do(t0(), "DELETE", "/v1/runtimes/"+other.RuntimeID+"?reason=re-register", nil, &stopped)
	reg := map[string]any{"workspace_id": "w1", "agent_id": "seed_reg", "agent": "shell", "pty_backend": "tmux",
		"pty_target": other.PaneID, "pid": other.PID + 100000}
	bad := func(what string, body map[string]any, code nudge.Code) {
		t.Helper()
		var ae *api.Error
		if err := td.c.do(t0(), "POST", "/v1/runtimes/register", body, nil); !errors.As(err, &ae) || ae.ErrorCode != code {
			t.Fatalf("%s: %v (want %s)", what, err, code)
		}
	}
	bad("another pid", reg, nudge.RegistryDrift)
	reg["pid"] = other.PID
	reg["pty_backend"] = "screen"
	bad("pty_backend screen", reg, nudge.BadRequest)
	reg["pty_backend"] = "tmux"
	reg["workspace"] = "w2"
	bad("workspace and workspace_id differ", reg, nudge.BadRequest)
	delete(reg, "workspace")
	reg["no_such_field"] = 1
	bad("an unknown field", reg, nudge.BadRequest)
	delete(reg, "no_such_field")
	var adopted runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes/register", reg, &adopted); err != nil || adopted.RuntimeID != "rt_w1.seed_reg" {
		t.Fatalf("register by the seed's names: %+v %v", adopted, err)
	}
}

// TestHeartbeatStatusKept: a heartbeat's status is kept on the runtime and shown
// (heartbeat_status); an offline heartbeat advances no cursor, so it acks nothing, and
// sending its cursor again later is no advance either.
func TestHeartbeatStatusKept(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "hb")
	beat := func(body map[string]any) api.HeartbeatReply {
		t.Helper()
		var hb api.HeartbeatReply
		if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", body, &hb); err != nil {
			t.Fatalf("heartbeat %v: %v", body, err)
		}
		return hb
	}
	if hb := beat(map[string]any{"status": "offline", "cursor": "c1"}); hb.CursorAdvanced {
		t.Fatal("an offline heartbeat advanced the cursor")
	}
	var got runtimeView
	if err := td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &got); err != nil || got.HeartbeatStatus != "offline" {
		t.Fatalf("after an offline heartbeat: heartbeat_status %q, %v", got.HeartbeatStatus, err)
	}
	if hb := beat(map[string]any{"status": "idle", "cursor": "c1"}); hb.CursorAdvanced {
		t.Fatal("the offline heartbeat's cursor, sent again, counted as an advance")
	}
	if hb := beat(map[string]any{"cursor": "c2"}); !hb.CursorAdvanced {
		t.Fatal("an active heartbeat with a new cursor did not advance")
	}
	td.c.do(t0(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &got)
	if got.HeartbeatStatus != "active" {
		t.Fatalf("heartbeat_status %q after a heartbeat without status, want active", got.HeartbeatStatus)
	}
}
