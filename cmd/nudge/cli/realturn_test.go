package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/detector"
)

// agentCase is one real agent CLI doing full turns against a model stand-in: the
// prompt is typed, submitted, the agent calls the stand-in, prints its reply (the ack
// marker composed by the stand-in from the envelope id) and its composer is idle
// again. Cases for other CLIs add themselves to TestXFullTurns beside these.
type agentCase struct {
	agent    string // nudge profile, detector pack and binary name
	env, pkg string // NUDGE_TEST_X override and the npm package, for agentBinary
	api      standin.API
	// setup points the CLI at the stand-in (home: its private HOME, root: the
	// project folder); nil: standin.Agents[agent].
	setup func(home, root, url string) ([]string, error)
	// approve is the keys (tmux key names) that approve a tool call in the CLI's
	// approval dialog; nil skips the approval part.
	approve []string
	prose   []string // status words as prose; nil: standin.StatusProse
	maxKB   int      // the largest prompt, in KiB, sent in the run
	// config, if not nil, changes the daemon's config after the run's own settings.
	config func(*daemon.Config)
	extra  []standin.Prompt // sent after standin.Prompts(maxKB)
	script standin.Script   // the model's answers; nil: standin.Scripted(prose)
	// stalled, if set, restarts a CLI that is not READY that long after its spawn (up to
	// three times), as its operator would: OpenCode 1.18.33 started with --port hangs
	// at start now and then, before it binds the port (docs/agents.md).
	stalled time.Duration
}

func TestCodexFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "codex", env: "NUDGE_TEST_CODEX", pkg: "@openai/codex", api: standin.Responses,
		approve: []string{"y"}, maxKB: 63, extra: []standin.Prompt{{Kind: "63KiB", Body: standin.Filler(63<<10, false)}}})
}

func TestClaudeFullTurns(t *testing.T) {
	testFullTurns(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages,
		approve: []string{"Enter"}, maxKB: 63, extra: []standin.Prompt{{Kind: "63KiB", Body: standin.Filler(63<<10, false)}}})
}

// fullTurns is one CLI's run: its stand-in, the daemon and the runtime.
type fullTurns struct {
	t     *testing.T
	c     agentCase
	srv   *standin.Server
	td    *testDaemon
	rt    runtimeView
	pack  *detector.Pack
	ids   []string          // every trigger sent, in order
	whole map[string]string // trigger id → body the model must get whole
	rec   *streamrec.Recorder
}

// startFullTurns starts the stand-in, points the CLI at it in a private HOME and
// spawns the CLI as a managed runtime, READY.
func startFullTurns(t *testing.T, c agentCase) *fullTurns {
	t.Helper()
	bin := agentBinary(t, c.agent, c.env, c.pkg)
	script := c.script
	if script == nil {
		script = standin.Scripted(c.prose)
	}
	srv, err := standin.Start(c.api, script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg, home := agentEnv(t, bin)
	cfg.Inject.AckTimeout = 20 * time.Second // a missed ack shows as a retyped prompt within the run
	if c.config != nil {
		c.config(&cfg)
	}
	root := cfg.Panes.Roots[0]
	os.MkdirAll(filepath.Join(root, "pkg"), 0o700)
	os.WriteFile(filepath.Join(root, "pkg", "file.go"), []byte("package pkg\n\n// F does nothing.\nfunc F() {}\n"), 0o600)
	setup := c.setup
	if setup == nil {
		setup = standin.Agents[c.agent].Setup
	}
	env, err := setup(home, root, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	packs, err := detector.LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	ft := &fullTurns{t: t, c: c, srv: srv, td: startDaemon(t, cfg), pack: packs[c.agent], whole: map[string]string{}}
	// A node TUI may take long to start on a loaded machine: up to 2 minutes.
	if err := ft.td.c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "ft", Role: "dev", Agent: c.agent, Dir: root}, &ft.rt); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(100 * time.Millisecond) {
		if err := ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &ft.rt); err == nil && ft.rt.Status == "ready" && ft.rt.Readiness == "READY" {
			return ft
		}
		if c.stalled > 0 && restarts < 3 && time.Since(start) > time.Duration(restarts+1)*c.stalled {
			restarts++
			t.Logf("%s drew nothing in %s: restarted (%d)", c.agent, c.stalled, restarts)
			ft.td.c.do(t0(), "POST", "/v1/runtimes/"+ft.rt.RuntimeID+"/restart", nil, nil)
		}
	}
	t.Fatalf("%s never became ready and READY: %+v\nscreen:\n%s", c.agent, ft.rt.Runtime, ft.screen())
	return ft
}

// send posts a trigger with body.
func (ft *fullTurns) send(id, body string) {
	ft.t.Helper()
	if _, err := ft.td.trigger(map[string]any{"trigger_id": id, "workspace": ft.rt.WorkspaceID, "agent": ft.rt.Role, "prompt": body}); err != nil {
		ft.t.Fatalf("%s: %v", id, err)
	}
	ft.ids = append(ft.ids, id)
	ft.whole[id] = body
}

// waitAcked waits (generously: a 64 KiB paste into a loaded TUI is slow) until the
// trigger is acked by the marker, and fails with its story and the screen if it ends
// any other way.
func (ft *fullTurns) waitAcked(id string) nudge.Trigger {
	ft.t.Helper()
	var tr nudge.Trigger
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := ft.td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &tr); err == nil && (tr.State == "acked" || tr.Closed) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An agent with a record acks by it, or by the marker its reply carries when that
	// came first (the stand-in answers at once; a CLI writes its record a moment after
	// it draws); the busy runs (record_test.go) reply without markers.
	signalOK := tr.AckSignal == ft.wantSignal() || tr.AckSignal == "marker"
	if tr.State != "acked" || tr.SubmittedAt == nil || !signalOK || tr.Fallback != "" {
		ft.t.Fatalf("%s: not submitted and acked by the agent's reply: %+v\nstory: %s\nmodel got it %d times\nscreen:\n%s",
			id, tr, story(ft.td.audit(id)), standin.Count(ft.srv.Requests(), id), ft.screen())
	}
	return tr
}

// wantSignal is the ack signal of the runtime's turns: the agent's own record where its
// profile names one, else the marker.
func (ft *fullTurns) wantSignal() string {
	if ft.td.d.Rooms().Profiles[ft.c.agent].Record != "" {
		return "record"
	}
	return "marker"
}

// waitSubmitted waits until the trigger left the composer, and fails with its story and
// the screen if it ends otherwise.
func (ft *fullTurns) waitSubmitted(id string) {
	ft.t.Helper()
	var tr nudge.Trigger
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := ft.td.c.do(t0(), "GET", "/v1/triggers/"+id, nil, &tr); err == nil && (tr.SubmittedAt != nil || tr.Closed) {
			break
		}
	}
	if tr.SubmittedAt == nil {
		ft.t.Fatalf("%s: not submitted: %+v\nstory: %s\nscreen:\n%s", id, tr, story(ft.td.audit(id)), ft.screen())
	}
}

// waitReady waits until the runtime is READY with nothing in its composer, and checks
// the screen the same way.
func (ft *fullTurns) waitReady(after string) {
	ft.t.Helper()
	var rt runtimeView
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt); err == nil && rt.Readiness == "READY" {
			c := detector.Classify(ft.pack, ft.styledScreen())
			if c.State == "READY" && c.Draft == "" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := detector.Classify(ft.pack, ft.styledScreen())
	ft.t.Fatalf("after %s: runtime %s/%s, screen classified %+v (want READY, empty composer)\nscreen:\n%s", after, rt.Status, rt.Readiness, c, ft.screen())
}

// waitReadiness waits until the runtime reads want.
func (ft *fullTurns) waitReadiness(want string) {
	ft.t.Helper()
	ft.td.waitRuntime(ft.rt.RuntimeID, func(r runtimeView) bool { return string(r.Readiness) == want })
}

// screen is the runtime's pane now (it may have been replaced: its current pane).
func (ft *fullTurns) screen() string {
	var rt runtimeView
	if err := ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt); err != nil {
		return fmt.Sprintf("(runtime: %v)", err)
	}
	out, err := exec.Command("tmux", "-L", ft.td.cfg.Panes.SocketName, "capture-pane", "-p", "-t", rt.PaneID).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(runtime %s/%s, pane %q: %v: %s)", rt.Status, rt.Readiness, rt.PaneID, err, out)
	}
	return string(out)
}

// styledScreen is the screen with its SGR attributes, as the daemon classifies it: a
// cue with a style (Pi's red "Error: ") tells chrome from the same words in prose
// only there.
func (ft *fullTurns) styledScreen() string {
	return ft.td.tmux("capture-pane", "-p", "-e", "-t", ft.rt.PaneID)
}

// checkModel fails unless the model got the prompt of each trigger sent exactly once
// (a duplicate is a prompt given twice to an agent that answered) and whole.
func (ft *fullTurns) checkModel() {
	ft.t.Helper()
	reqs := ft.srv.Requests()
	for _, id := range ft.ids {
		if n := standin.Count(reqs, id); n != 1 {
			ft.t.Errorf("%s: the model got the prompt %d times, want 1\nstory: %s", id, n, story(ft.td.audit(id)))
			continue
		}
		for _, r := range reqs {
			for _, h := range r.History {
				ids := standin.EnvelopeIDs(h)
				if !r.Side && len(ids) > 0 && ids[0] == id && !strings.Contains(h, ft.whole[id]) {
					ft.t.Errorf("%s: the model got the prompt cut or changed (%d bytes sent, %d received): %s", id, len(ft.whole[id]), len(h), firstDiff(h, ft.whole[id]))
				}
			}
		}
	}
}

// testFullTurns runs one CLI through every kind of prompt, a trigger while it is
// mid-turn, a reply made of its status words as prose, and a trigger while an approval
// dialog is open.
func testFullTurns(t *testing.T, c agentCase) {
	ft := startFullTurns(t, c)
	var kinds []string
	for i, p := range append(standin.Prompts(c.maxKB), c.extra...) {
		id := fmt.Sprintf("%s-%02d-%s", c.agent, i, p.Kind)
		ft.send(id, p.Body)
		ft.waitAcked(id)
		kinds = append(kinds, p.Kind)
		ft.waitReady(id)
	}
	t.Logf("%s: submitted and acked once each: %s", c.agent, strings.Join(kinds, " "))

	// From here on the pane's output stream is recorded if NUDGE_RECORD_STREAMS
	// names a folder (detector/testdata/streams holds the recordings).
	ft.record()
	defer ft.stopRecording()

	// Mid-turn: a slow reply keeps the agent busy; the next trigger is held (BUSY)
	// or typed into the agent's own queue, per its profile, never over the turn.
	ft.mark("READY", "idle composer")
	ft.send("slow", "take your time standin:slow=6s")
	ft.waitSubmitted("slow")
	ft.waitReadiness("BUSY")
	ft.mark("BUSY", "a slow turn")
	ft.send("midturn", "sent while the agent works")
	slow := ft.waitAcked("slow")
	mid := ft.waitAcked("midturn")
	// Acked by the record means the agent took the prompt into its turn (Codex takes it
	// into the running one): the model gets it when that turn next calls it.
	ft.waitModelGot("midturn")
	if first(ft.srv.Requests(), "midturn") < first(ft.srv.Requests(), "slow") {
		var calls []string
		for i, r := range ft.srv.Requests() {
			var ids []string
			for _, h := range r.History {
				ids = append(ids, standin.EnvelopeIDs(h)...)
			}
			calls = append(calls, fmt.Sprintf("#%d side=%v tool=%v at=%s ids=%v", i, r.Side, r.ToolResult, r.At.Format("05.000"), ids))
		}
		t.Fatalf("the model got midturn before slow\nslow %+v\nmidturn %+v\ncalls:\n%s", slow, mid, strings.Join(calls, "\n"))
	}
	ft.waitReady("midturn")
	ft.mark("READY", "both turns over")
	t.Logf("mid-turn trigger: %s", events(ft.td.audit("midturn")))

	// Prose: the reply is made of the pack's busy, error and confirmation words; the
	// runtime is READY after it, and the next trigger goes through.
	ft.send("prose", "tell me about your status words standin:prose")
	ft.waitAcked("prose")
	ft.waitReady("prose")
	ft.mark("READY", "after a reply of status words as prose")
	ft.send("after-prose", "one more after the prose")
	ft.waitAcked("after-prose")
	ft.waitReady("after-prose")

	if c.approve != nil {
		ft.approval()
	}
	time.Sleep(2 * time.Second) // a late duplicate would show up here
	ft.checkModel()
}

// approval: a tool call opens the CLI's approval dialog (NEEDS_CONFIRMATION); a
// trigger sent then is held, nothing is typed into the dialog; the test approves in
// the pane, the turn ends (acked), and the held trigger is delivered and acked.
func (ft *fullTurns) approval() {
	ft.t.Helper()
	ft.send("tool", "create the file standin:tool=`touch approved.txt`")
	ft.waitReadiness("NEEDS_CONFIRMATION")
	ft.mark("NEEDS_CONFIRMATION", "approval dialog")
	ft.send("held", "sent while the dialog is open")
	time.Sleep(3 * time.Second)
	var held nudge.Trigger
	ft.td.c.do(t0(), "GET", "/v1/triggers/held", nil, &held)
	if held.InjectedAt != nil || held.State == "submitted" || strings.Contains(ft.screen(), "sent while the dialog") {
		ft.t.Fatalf("typed into the approval dialog: %+v\nstory: %s\ntool: %s\nscreen:\n%s", held, story(ft.td.audit("held")), story(ft.td.audit("tool")), ft.screen())
	}
	if ft.pack.Dialog != nil {
		ft.answerDialog("approve")
	} else {
		ft.td.tmux(append([]string{"send-keys", "-t", ft.rt.PaneID}, ft.c.approve...)...)
	}
	ft.waitAcked("tool")
	// Acked (the prompt is in the agent's record) comes before the approved command ran.
	approved := filepath.Join(ft.td.cfg.Panes.Roots[0], "approved.txt")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(approved); err == nil {
			break
		}
	}
	if _, err := os.Stat(approved); err != nil {
		ft.t.Errorf("the approved command did not run: %v", err)
	}
	ft.waitAcked("held")
	ft.waitReady("held")
	ft.mark("READY", "approved, the held trigger's turn over")
	ft.t.Logf("trigger held by the approval dialog: %s", events(ft.td.audit("held")))
}

// answerDialog answers the runtime's open dialog through nudge (POST .../answer) with
// choice: first with a dialog id that is not the one on screen (409 DIALOG_CHANGED,
// nothing typed), then with a token that may trigger but not answer (403), then as asked.
func (ft *fullTurns) answerDialog(choice string) {
	ft.t.Helper()
	var rt runtimeView
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && rt.Dialog == nil; time.Sleep(50 * time.Millisecond) {
		ft.td.c.do(t0(), "GET", "/v1/runtimes/"+ft.rt.RuntimeID, nil, &rt)
	}
	if rt.Dialog == nil || len(rt.Dialog.Options) < 2 || rt.Dialog.ApproveKey == "" || rt.Dialog.DenyKey == "" {
		ft.t.Fatalf("no dialog read on the runtime: %+v\nscreen:\n%s", rt.Dialog, ft.screen())
	}
	ft.t.Logf("dialog %s %q: %+v", rt.Dialog.DialogID, rt.Dialog.Title, rt.Dialog.Options)
	path := "/v1/runtimes/" + ft.rt.RuntimeID + "/answer"
	err := ft.td.c.do(t0(), "POST", path, map[string]any{"dialog_id": "000000000000", "choice": choice, "reason": "test"}, nil)
	wantAPIError(ft.t, "stale dialog id", err, "DIALOG_CHANGED", rt.Dialog.DialogID)
	tok := ft.td.issue(ft.t, "--subject", "bot", "--workspace", ft.rt.WorkspaceID, "--verbs", "trigger", "--ttl", "1h")
	err = ft.td.as(tok).do(t0(), "POST", path, map[string]any{"dialog_id": rt.Dialog.DialogID, "choice": choice, "reason": "no verb"}, nil)
	wantAPIError(ft.t, "token without answer", err, "FORBIDDEN", "may not answer")
	var refused []nudge.AuditRecord
	ft.td.c.do(t0(), "GET", "/v1/audit?event=api_refused", nil, &refused)
	if len(refused) == 0 || !strings.Contains(refused[len(refused)-1].Reason, "/answer") || !strings.HasPrefix(refused[len(refused)-1].Subject, "bot") {
		ft.t.Errorf("the refused answer is not audited: %+v", refused)
	}
	out, errOut, code := ft.td.runCLI(choice, ft.rt.RuntimeID, "--dialog", rt.Dialog.DialogID, "--reason", "the test "+choice+"s")
	if code != 0 || !strings.Contains(out, "answered "+ft.rt.RuntimeID) {
		ft.t.Fatalf("nudge %s: %d %s %s\nscreen:\n%s", choice, code, out, errOut, ft.screen())
	}
	var answered []nudge.AuditRecord
	ft.td.c.do(t0(), "GET", "/v1/audit?event=dialog_answered&runtime="+ft.rt.RuntimeID, nil, &answered)
	if len(answered) == 0 || !strings.Contains(answered[len(answered)-1].Reason, "the test "+choice+"s") {
		ft.t.Errorf("the answer is not audited with its reason: %+v", answered)
	}
	ft.t.Logf("nudge %s: %s", choice, strings.TrimSpace(out))
}

// waitModelGot waits until a model call holds the trigger's prompt.
func (ft *fullTurns) waitModelGot(id string) {
	ft.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if first(ft.srv.Requests(), id) >= 0 {
			return
		}
	}
	ft.t.Fatalf("%s: acked, but the model never got it\nstory: %s\nscreen:\n%s", id, story(ft.td.audit(id)), ft.screen())
}

// firstDiff shows where got stops matching want's text (got holds want after some
// prefix: the envelope header).
func firstDiff(got, want string) string {
	i := strings.Index(got, want[:min(len(want), 40)])
	if i < 0 {
		return fmt.Sprintf("the start is missing; got %.200q", got)
	}
	g := got[i:]
	n := 0
	for n < len(g) && n < len(want) && g[n] == want[n] {
		n++
	}
	return fmt.Sprintf("differs at byte %d: got %.80q, want %.80q", n, g[n:], want[n:])
}

// first returns the index of the first turn request whose prompt holds trigger id's
// envelope, or -1.
func first(reqs []standin.Request, id string) int {
	for i, r := range reqs {
		if !r.Side && !r.ToolResult && standin.Count(reqs[i:i+1], id) > 0 {
			return i
		}
	}
	return -1
}

// story is the records one per line: time since the first, event, code, reason and
// detail.
func story(recs []nudge.AuditRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "\n  +%6.3fs %s", r.Time.Sub(recs[0].Time).Seconds(), r.Event)
		if r.Code != "" {
			fmt.Fprintf(&b, " [%s]", r.Code)
		}
		if r.Reason != "" {
			fmt.Fprintf(&b, " reason=%q", r.Reason)
		}
		if len(r.Detail) > 0 {
			fmt.Fprintf(&b, " %.300s", r.Detail)
		}
	}
	return b.String()
}

// record starts recording the runtime's pane into $NUDGE_RECORD_STREAMS/AGENT_fullturn.stream.
func (ft *fullTurns) record() { ft.recordAs(ft.c.agent + "_fullturn") }

// recordAs starts recording the runtime's pane into $NUDGE_RECORD_STREAMS/NAME.stream.
func (ft *fullTurns) recordAs(name string) {
	dir := os.Getenv("NUDGE_RECORD_STREAMS")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name+".stream"))
	if err != nil {
		ft.t.Fatal(err)
	}
	ft.t.Cleanup(func() { f.Close() })
	var cols, rows int
	fmt.Sscanf(ft.td.tmux("display-message", "-p", "-t", ft.rt.PaneID, "#{pane_width} #{pane_height}"), "%d %d", &cols, &rows)
	cfg := controlmode.Config{SocketName: ft.td.cfg.Panes.SocketName, Session: "agents_" + ft.rt.WorkspaceID}
	root := ft.td.cfg.Panes.Roots[0] // a temporary folder: shown as /src/demo/xxx…, same length
	o := streamrec.Options{Agent: ft.c.agent, Cols: cols, Rows: rows, Replace: []string{root, ("/src/demo/" + strings.Repeat("x", len(root)))[:len(root)]}}
	if ft.rec, err = streamrec.Record(t0(), cfg, ft.rt.PaneID, o, f); err != nil {
		ft.t.Fatal(err)
	}
}

// mark records the readiness the pane shows now, if recording.
func (ft *fullTurns) mark(state, note string) {
	if ft.rec != nil {
		time.Sleep(300 * time.Millisecond) // the recorder's client has the latest output
		ft.rec.Mark(state, note)
	}
}

func (ft *fullTurns) stopRecording() {
	if ft.rec != nil {
		if err := ft.rec.Close(); err != nil {
			ft.t.Error(err)
		}
	}
}
