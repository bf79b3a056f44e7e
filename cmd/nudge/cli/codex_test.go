package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// codexBinary finds the real Codex CLI: $NUDGE_TEST_CODEX, else the npm cache that
// .ci/test fills, else PATH.
func codexBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NUDGE_TEST_CODEX"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../../.cache/npm/node_modules/.bin/codex"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p
	}
	t.Skip("Codex CLI not installed (.ci/test installs @openai/codex into .cache/npm)")
	return ""
}

// codexSetup points the real Codex CLI, in a private HOME, at a model stand-in on
// loopback that never answers (silentModel: the tests are about input, and nothing may
// leave the machine), trusts the test's root folder, and returns the config to start a
// daemon with, CODEX_HOME and the stand-in (what the model received).
func codexSetup(t *testing.T) (daemon.Config, string, *standin.Server) {
	t.Helper()
	return codexSetupWith(t, nil)
}

// codexSetupWith is codexSetup with the stand-in answering by script (nil: never).
func codexSetupWith(t *testing.T, script standin.Script) (daemon.Config, string, *standin.Server) {
	t.Helper()
	codex := codexBinary(t)
	cfg := newTestConfig(t)
	home := t.TempDir()
	// Codex detaches an app-server daemon (setsid) that outlives its pane: end every
	// process whose command line lives under this test's home, by pid. Registered
	// first, so it runs after the daemon and the tmux server are gone.
	t.Cleanup(func() { killProcessesUnder(t, home) })
	t.Setenv("HOME", home)
	t.Setenv("PATH", filepath.Dir(codex)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var srv *standin.Server
	if script == nil {
		srv = silentModel(t, home, cfg.Panes.Roots[0], "codex")
	} else {
		srv = scriptedModel(t, home, cfg.Panes.Roots[0], "codex", script)
	}
	cfg.Inject.AckTimeout = time.Minute // the model never answers; the tests are about input
	cfg.Inject.RateLimit = 1000         // 20 in a row is over the default 10/min
	return cfg, os.Getenv("CODEX_HOME"), srv
}

// modelGotEachAtMostOnce fails the test if the model stand-in received any trigger's
// prompt more than once, or received none of them (nudge gave a prompt twice, or none
// reached the agent's turn).
//
// A submitted prompt reaches the model when the agent gets to it, not when its composer
// empties: under load OpenCode sent its turn's call 26 s after the last receipt (and 10 s
// after a title call, a side call that also carries the prompt). So it waits, generously,
// for the first turn call that carries a trigger's prompt, and says what calls it saw if
// none comes.
func modelGotEachAtMostOnce(t *testing.T, srv *standin.Server) {
	t.Helper()
	wait := 2 * time.Minute
	if t.Failed() {
		wait = 0 // deferred after a failure: report what is there, do not wait for more
	}
	var reqs []standin.Request
	seen := map[string]bool{}
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		reqs = srv.Requests()
		for _, r := range reqs {
			if r.Side {
				continue
			}
			for _, h := range r.History {
				for _, id := range standin.EnvelopeIDs(h) {
					seen[id] = true
				}
			}
		}
		if len(seen) > 0 || !time.Now().Before(deadline) {
			break
		}
	}
	if len(seen) == 0 {
		var calls []string
		for _, r := range reqs {
			var ids []string
			for _, h := range r.History {
				ids = append(ids, standin.EnvelopeIDs(h)...)
			}
			calls = append(calls, fmt.Sprintf("%s side=%v tool_result=%v triggers=%v",
				r.At.Format("15:04:05.000"), r.Side, r.ToolResult, ids))
		}
		t.Fatalf("the model received no trigger's prompt in a turn within %s (%d calls):\n%s", wait, len(reqs), strings.Join(calls, "\n"))
	}
	for id := range seen {
		if n := standin.Count(reqs, id); n > 1 {
			t.Errorf("the model received trigger %s's prompt %d times", id, n)
		}
	}
}

// spawnCodex starts a managed Codex runtime and waits until its composer takes input.
func (td *testDaemon) spawnCodex(role string) runtimeView {
	td.t.Helper()
	var rt runtimeView
	if err := td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "cx", Role: role, Agent: "codex", Dir: td.cfg.Panes.Roots[0]}, &rt); err != nil {
		td.t.Fatal(err)
	}
	return td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
}

// TestCodexTwentyTriggersAllSubmitted drives the real Codex TUI: logged in with a dummy
// key, the folder trusted, 20 triggers in a row must each leave the composer.
func TestCodexTwentyTriggersAllSubmitted(t *testing.T) {
	cfg, _, model := codexSetup(t)
	td := startDaemon(t, cfg)
	rt := td.spawnCodex("dev")
	td.submitInRow(rt, "cx-", 20, func(i int) string { return fmt.Sprintf("task %d: say hello", i) })
	modelGotEachAtMostOnce(t, model)
	td.composerEmpties(rt.PaneID, "codex") // nothing is left typed but unsent
}

// submitInRow sends n triggers to the runtime one after the other and fails unless each
// leaves the agent's composer (submitted).
func (td *testDaemon) submitInRow(rt runtimeView, prefix string, n int, prompt func(int) string) {
	td.t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s%02d", prefix, i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": rt.WorkspaceID, "agent": rt.Role, "prompt": prompt(i)}); err != nil {
			td.t.Fatalf("%s: %v", id, err)
		}
		got := td.waitTrigger(id, func(t nudge.Trigger) bool { return t.SubmittedAt != nil || t.Closed })
		if got.SubmittedAt == nil {
			td.t.Fatalf("%s: not submitted: %+v\nscreen:\n%s", id, got, td.tmux("capture-pane", "-p", "-t", rt.PaneID))
		}
	}
}

// killProcessesUnder ends the processes whose command line mentions dir (the test's own
// temp directory) or whose HOME is dir: SIGTERM, then SIGKILL after a grace period. (As in package detector's
// live Codex test.)
// TestCodexResumeRunsARealTurn: an unacked trigger falls back to the real `codex resume
// <session> <prompt>` in the runtime's pane, and that resume runs a real turn of the
// session against the model stand-in: the model gets the prompt again with the session's
// earlier turn in its history, Codex prints the ack marker, and the resumed TUI is the
// runtime's program, READY. (The stand-in fails the live turn of the prompt with a
// server error, so its ack times out.) The profile's resume was `codex exec resume`, which
// exited 1 at once: Codex's app-server daemon keeps the session's writer lock after the
// TUI is gone ("thread ... already has an active writer").
func TestCodexResumeRunsARealTurn(t *testing.T) {
	var live atomic.Bool // the live turn of "second" got its call (answered with an error)
	script := standin.Scripted(nil)
	cfg, codexHome, model := codexSetupWith(t, func(req standin.Request) standin.Reply {
		if !req.Side && standin.Count([]standin.Request{req}, "second") > 0 && live.CompareAndSwap(false, true) {
			return standin.Reply{Status: 500}
		}
		return script(req)
	})
	cfg.Inject.AckRetries = 0
	cfg.Chain.LaunchGrace = 2 * time.Second
	// This run is about the resume fallback after an ack timeout: Codex's own record
	// would ack the prompt its failed turn took (it is in the session), so the profile
	// here reads no record and acks by the marker alone.
	cfg.ProfileDir = t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "panes", "profiles", "codex.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"record": "codex",`), nil, 1)
	b = bytes.Replace(b, []byte(`"ack_signals": ["record", `), []byte(`"ack_signals": [`), 1)
	os.WriteFile(filepath.Join(cfg.ProfileDir, "codex.json"), b, 0o644)
	td := startDaemon(t, cfg)
	rt := td.spawnCodex("dev")
	// A first prompt makes Codex start a thread; its rollout file names the session id,
	// which the agent side reports with a heartbeat.
	td.trigger(map[string]any{"trigger_id": "first", "workspace": "cx", "agent": "dev", "prompt": "start a thread"})
	if got := td.waitTriggerFor("first", 2*time.Minute, closed); got.State != "acked" {
		t.Fatalf("first: %+v\nstory: %s\nscreen:\n%s", got, story(td.audit("first")), td.tmux("capture-pane", "-p", "-t", rt.PaneID))
	}
	var session string
	deadline := time.Now().Add(30 * time.Second)
	for session == "" && time.Now().Before(deadline) {
		filepath.WalkDir(filepath.Join(codexHome, "sessions"), func(p string, d os.DirEntry, err error) error {
			if m := rolloutRE.FindStringSubmatch(filepath.Base(p)); m != nil {
				session = m[1]
			}
			return nil
		})
		time.Sleep(100 * time.Millisecond)
	}
	if session == "" {
		t.Fatal("Codex wrote no rollout file")
	}
	if err := td.c.do(t0(), "POST", "/v1/runtimes/"+rt.RuntimeID+"/heartbeat", map[string]any{"session_id": session}, nil); err != nil {
		t.Fatal(err)
	}
	td.trigger(map[string]any{"trigger_id": "second", "workspace": "cx", "agent": "dev", "prompt": "continue please", "ack_timeout_ms": 3000})
	got := td.waitTriggerFor("second", 2*time.Minute, closed)
	recs := td.audit("second")
	if got.Fallback != "resume" || got.ErrorCode != "ACK_TIMEOUT" {
		t.Fatalf("receipt %+v\nstory %s\nruntime story %s\nscreen:\n%s", got, story(recs), rtStory(td, rt.RuntimeID), paneText(td, got.FallbackPane))
	}
	var argv []string
	for _, r := range recs {
		if r.Event == "fallback_resume_started" {
			var s struct{ Argv []string }
			json.Unmarshal(r.Detail, &s)
			argv = s.Argv
		}
	}
	// The session only: the prompt is typed into the resumed Codex, never on its argv.
	if len(argv) != 3 || argv[0] != "codex" || argv[1] != "resume" || argv[2] != session {
		t.Fatalf("resume argv %q", argv)
	}
	for _, r := range recs {
		if r.Event == "fallback_resume_failed" || r.Code == "RESUME_FAILED" {
			t.Fatalf("a resume failed: %s\nruntime story %s", story(recs), rtStory(td, rt.RuntimeID))
		}
	}
	// The resumed turn: the model gets the prompt a second time (the live turn's call
	// failed), with the session's first turn before it, and Codex prints the
	// marker the stand-in answered with into the pane.
	var resumed *standin.Request
	for deadline := time.Now().Add(time.Minute); resumed == nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		reqs := model.Requests()
		for i := range reqs {
			if !reqs[i].Side && standin.Count(reqs[i:i+1], "second") > 0 && standin.Count(reqs[i:i+1], "first") > 0 && first(reqs, "second") != i {
				resumed = &reqs[i]
			}
		}
	}
	if resumed == nil {
		t.Fatalf("the resume made no turn of the session: %d model calls\nstory %s\nruntime story %s\nscreen:\n%s", len(model.Requests()), story(td.audit("second")), rtStory(td, rt.RuntimeID), paneText(td, got.FallbackPane))
	}
	var screen string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if screen = paneText(td, got.FallbackPane); strings.Contains(screen, "ACK_TRIGGER:second") {
			break
		}
	}
	if !strings.Contains(screen, "ACK_TRIGGER:second") {
		t.Fatalf("the resumed turn printed no ack marker:\n%s", screen)
	}
	td.waitRuntimeFor(rt.RuntimeID, time.Minute, func(r runtimeView) bool {
		return r.Status == "ready" && r.Readiness == "READY" && r.PaneID == got.FallbackPane
	})
}

// paneText is the pane's text with 200 lines of its history, or why there is none.
func paneText(td *testDaemon, pane string) string {
	out, err := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "capture-pane", "-p", "-S", "-200", "-t", pane).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(pane %s: %v: %s)", pane, err, out)
	}
	return string(out)
}

func rtStory(td *testDaemon, id string) string {
	var recs []nudge.AuditRecord
	td.c.do(t0(), "GET", "/v1/audit?runtime_id="+id, nil, &recs)
	return story(recs)
}

var rolloutRE = regexp.MustCompile(`^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

func killProcessesUnder(t *testing.T, dir string) {
	t.Helper()
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && strings.Contains(string(cmd), dir) || strings.Contains("\x00"+string(env), "\x00HOME="+dir+"\x00") {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	sig := syscall.SIGTERM
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		pids := find()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
		time.Sleep(200 * time.Millisecond)
		if time.Until(deadline) < 10*time.Second {
			sig = syscall.SIGKILL
		}
	}
	t.Errorf("processes under %s still running: %v", dir, find())
}
