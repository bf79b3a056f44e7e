package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// Fault tests (issue 8): real tmux, real processes. Each recovers without losing a
// trigger: every accepted trigger reaches a final receipt, and the daemon serves new
// spawns and triggers afterwards.

// TestFaultTmuxServerKilled kills the whole tmux server while triggers are in flight.
// The daemon notices, the runtimes go offline, every trigger ends in a final receipt
// (delivered, or failed/fell back with a code), and once a new spawn recreates the
// server, spawns and triggers work again.
func TestFaultTmuxServerKilled(t *testing.T) {
	td := startDaemon(t, faultConfig(t))
	a, _ := td.catAgent("w1", "a")
	b, _ := td.catAgent("w1", "b")

	done := make(chan []string, 1)
	go func() { done <- td.fireTriggers("w1", "k", 40, "a", "b") }()
	time.Sleep(20 * time.Millisecond) // let a few through first
	td.tmux("kill-server")
	ids := <-done
	if len(ids) == 0 {
		t.Fatal("no trigger accepted")
	}
	got := td.waitAllClosed(ids, 45*time.Second)
	counts := map[string]int{}
	conflicts := 0
	for id, tr := range got {
		if !final(tr) {
			t.Errorf("%s: closed without a final outcome: %+v", id, tr)
		}
		counts[string(tr.State)+"/"+string(tr.ErrorCode)+"/"+tr.Fallback]++
		if strings.Contains(tr.Message, "busy (restarting)") {
			conflicts++
		}
	}
	t.Logf("%d triggers accepted: %v", len(ids), counts)
	if conflicts > 0 {
		// One fallback chain per runtime: the others wait for its relaunch and go live.
		t.Errorf("%d triggers failed because another trigger's fallback was relaunching the runtime", conflicts)
	}
	for _, rt := range []runtimeView{a, b} {
		// noticed: the pane vanished with the server (it may be back by now)
		if story := td.runtimeAudit(rt.RuntimeID); !strings.Contains(story, "(REGISTRY_DRIFT)") && !strings.Contains(story, "(PANE_DEAD)") {
			t.Errorf("%s: the loss of its pane was never recorded: %s", rt.Role, story)
		}
	}

	_, cfile := td.catAgent("w1", "c") // recreates the server and the session
	tr, err := td.trigger(map[string]any{"trigger_id": "after-c", "workspace": "w1", "agent": "c", "prompt": "after the crash"})
	if err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger(tr.TriggerID, closed); got.State != "acked" {
		t.Fatalf("trigger after the crash: %+v", got)
	}
	waitFile(t, cfile, "after the crash", 10*time.Second)
	// The old runtimes are restarted on the new server and take triggers again.
	for _, rt := range []runtimeView{a, b} {
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
		id := "after-" + rt.Role
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": rt.Role, "prompt": "back " + rt.Role}); err != nil {
			t.Fatal(err)
		}
		if got := td.waitTrigger(id, closed); got.State != "acked" {
			t.Fatalf("trigger to restarted %s: %+v", rt.Role, got)
		}
	}
	// The new server numbers its panes from %0 again: a pane id a runtime had before the
	// crash may now be another runtime's. No envelope may reach another runtime's pane.
	for i, rt := range []runtimeView{a, b} {
		cur := td.get(rt.RuntimeID)
		screen := td.tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", cur.PaneID)
		for _, id := range ids {
			n, _ := strconv.Atoi(strings.TrimPrefix(id, "k-"))
			if n%2 != i && strings.Contains(screen, "[BRIDGE_TRIGGER id="+id+" ") {
				t.Errorf("%s's envelope reached %s's pane %s:\n%s", id, rt.Role, cur.PaneID, screen)
			}
		}
	}
}

// TestFaultSessionKilled kills the workspace's session: the daemon notices, the runtimes
// go offline with REGISTRY_DRIFT audited, are restarted (policy: managed runtimes restart
// after RestartDelay), and triggers afterwards are delivered.
func TestFaultSessionKilled(t *testing.T) {
	td := startDaemon(t, faultConfig(t))
	a, _ := td.catAgent("w1", "a")
	td.catAgent("w2", "x") // another workspace on the same server is untouched
	oldPane := a.PaneID

	td.tmux("kill-session", "-t", "=agents_w1")
	td.waitRuntime(a.RuntimeID, func(r runtimeView) bool { return r.PaneID != oldPane && r.Status == "ready" })
	story := td.runtimeAudit(a.RuntimeID)
	if !strings.Contains(story, "(REGISTRY_DRIFT)") {
		t.Fatalf("no REGISTRY_DRIFT audited: %s", story)
	}
	t.Logf("runtime story: %s", story)

	a2 := td.get(a.RuntimeID)
	file := strings.TrimPrefix(a2.Argv[len(a2.Argv)-1], "exec cat >> ")
	if _, err := td.trigger(map[string]any{"trigger_id": "s1", "workspace": "w1", "agent": "a", "prompt": "after the session"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("s1", closed); got.State != "acked" {
		t.Fatalf("trigger after the session was killed: %+v", got)
	}
	waitFile(t, file, "after the session", 10*time.Second)
}

// TestFaultPaneKilledMidInjection SIGKILLs the pane's program right after a large
// multi-line trigger is accepted: the trigger ends failed or fell back with PANE_DEAD or
// TARGET_NOT_FOUND, or delivered if it won the race; it never stays open.
func TestFaultPaneKilledMidInjection(t *testing.T) {
	td := startDaemon(t, faultConfig(t))
	rounds := 3
	if chaosLong() {
		rounds = 15
	}
	var line strings.Builder
	for line.Len() < 60<<10 {
		fmt.Fprintf(&line, "line %05d of a large prompt to a pane that is about to die\n", line.Len())
	}
	prompt := line.String()
	outcomes := map[string]int{}
	for i := range rounds {
		role := fmt.Sprintf("a%d", i)
		rt, file := td.catAgent("w1", role)
		pid := rt.PID
		if pid == 0 {
			pid, _ = strconv.Atoi(strings.TrimSpace(td.tmux("display", "-p", "-t", rt.PaneID, "#{pane_pid}")))
		}
		id := fmt.Sprintf("big-%d", i)
		accepted := make(chan struct{})
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			<-accepted
			if i%3 == 1 {
				time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}()
		tr, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": role, "prompt": prompt})
		close(accepted)
		<-killed
		if err != nil {
			t.Fatalf("trigger: %v", err)
		}
		got := td.waitAllClosed([]string{tr.TriggerID}, 45*time.Second)[id]
		story := events(td.audit(id))
		outcomes[string(got.State)+"/"+string(got.ErrorCode)+"/"+got.Fallback]++
		switch {
		case (got.State == "acked" || got.State == "submitted") && got.Fallback == "":
			// It won the race: then the pane's program read all of it, Enter included.
			if !fileHolds(file, "[/BRIDGE_TRIGGER]", 5*time.Second) {
				_, alive := os.Stat(fmt.Sprintf("/proc/%d", pid))
				t.Fatalf("round %d: receipt %s but the program never read the whole prompt (pid %d, /proc: %v); panes:\n%s\naudit: %+v",
					i, got.State, pid, alive, td.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{pane_dead} #{pane_current_command}"), td.audit(id))
			}
		case paneGone(string(got.ErrorCode)) || paneGone(causeOf(td.audit(id))):
			// failed or fell back because the pane died
		default:
			t.Fatalf("round %d: receipt %s/%s/%s %q; audit: %s", i, got.State, got.ErrorCode, got.Fallback, got.Message, story)
		}
		if out, err := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "has-session").CombinedOutput(); err != nil {
			// tmux 3.3a segfaults on a paste into a dead pane; the paste is guarded.
			t.Fatalf("round %d: the tmux server died under the fault: %v %s; audit: %s", i, err, out, story)
		}
		// the runtime is restarted by policy, in a new process
		td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.PID != pid })
	}
	t.Logf("outcomes: %v", outcomes)
}

func paneGone(code string) bool { return code == "PANE_DEAD" || code == "TARGET_NOT_FOUND" }

// causeOf is the code of a trigger's first fallback_required record: why it fell back.
func causeOf(recs []nudge.AuditRecord) string {
	for _, r := range recs {
		if r.Event == "fallback_required" {
			return string(r.Code)
		}
	}
	return ""
}

// TestFaultControlClientStalled stops the daemon (SIGSTOP, so its tmux -C client stops
// being read) for 10 s while a pane writes as fast as it can, then lets it go on. tmux
// pauses the pane rather than cutting the client off; afterwards the control connection
// is alive (or redialled by the daemon itself), triggers deliver, and a human attached to
// the same session was never detached nor resized.
func TestFaultControlClientStalled(t *testing.T) {
	stall := 10 * time.Second
	bin := buildChaosNudge(t)
	cd := newChaosDaemon(t, bin, "--rate-limit", "100000/min", "--launch-grace", "300ms")
	cd.start()
	file := filepath.Join(cd.root, "a.lines")
	cd.spawn(spawnBody{Workspace: "w1", Role: "a", Agent: "shell", Argv: []string{"sh", "-c", "exec cat >> " + file}})
	human := cd.attachHuman("=agents_w1", 132, 43)
	size := cd.humanSize(human)
	if size == "" {
		t.Fatal("human client not listed")
	}
	cd.triggerAndWait("before", "a", file, 30*time.Second)
	dials := cd.metric("nudge_controlmode_dials_total")

	noisy := cd.spawn(spawnBody{Workspace: "w1", Role: "noisy", Agent: "shell",
		Argv: []string{"sh", "-c", "yes 0123456789abcdef | head -c 200000000; exec cat"}})
	// The human watches the noisy pane, so tmux draws it for them too.
	cd.tmux("select-window", "-t", noisy.PaneID)
	time.Sleep(500 * time.Millisecond) // the stream is flowing
	cd.signal(syscall.SIGSTOP)
	time.Sleep(stall)
	cd.signal(syscall.SIGCONT)

	cd.triggerAndWait("after", "a", file, 60*time.Second)
	if got := cd.humanSize(human); got != size {
		t.Fatalf("human client after the stall: %q, before %q (detached or resized)", got, size)
	}
	if err := human.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the human's tmux client exited: %v", err)
	}
	log := cd.log()
	if strings.Contains(log, "too far behind") {
		t.Logf("the control client was cut off (too far behind) and redialled")
	}
	t.Logf("dials before the stall %.0f, after %.0f; pauses %.0f", dials,
		cd.metric("nudge_controlmode_dials_total"), cd.metric("nudge_controlmode_pause_total"))
	// The noisy pane's runtime is still known and live.
	rt := cd.waitRuntime(noisy.RuntimeID, "ready", 30*time.Second)
	_ = rt
}

// TestFaultSlowAPIClients hits a subprocess daemon with 200 concurrent trigger requests,
// 50 requests that stop half-way through their body and 50 /v1/events streams that are
// never read. Meanwhile another client's trigger is answered, the daemon's RSS stays
// bounded, and once the bad clients go away its goroutines return near their baseline.
func TestFaultSlowAPIClients(t *testing.T) {
	bin := buildChaosNudge(t)
	cd := newChaosDaemon(t, bin, "--rate-limit", "100000/min", "--launch-grace", "300ms")
	cd.start()
	file := filepath.Join(cd.root, "a.lines")
	for _, role := range []string{"a0", "a1", "a2", "a3"} {
		cd.spawn(spawnBody{Workspace: "w1", Role: role, Agent: "shell", Argv: []string{"sh", "-c", "exec cat >> " + file + "." + role}})
	}
	cd.spawn(spawnBody{Workspace: "w1", Role: "b", Agent: "shell", Argv: []string{"sh", "-c", "exec cat >> " + file + ".b"}})
	cd.triggerAndWait("warm", "b", file+".b", 30*time.Second)
	base := cd.metric("go_goroutines")
	if base <= 0 {
		t.Fatalf("no go_goroutines in /metrics")
	}
	rss0 := cd.rssKB()
	peak := rss0
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if kb := cd.rssKB(); kb > peak {
				peak = kb
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	dial := func() net.Conn {
		c, err := net.Dial("unix", cd.socket)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		return c
	}
	var bad []net.Conn
	for i := range 50 { // half-written requests
		c := dial()
		fmt.Fprintf(c, "POST /v1/triggers HTTP/1.1\r\nHost: nudge\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{\"trigger_id\":\"half-%d\",\"workspace\":\"w1\",\"agent\":\"a\",\"prom", i)
		bad = append(bad, c)
	}
	for range 50 { // event streams never read
		c := dial()
		io.WriteString(c, "GET /v1/events HTTP/1.1\r\nHost: nudge\r\n\r\n")
		bad = append(bad, c)
	}
	// 200 concurrent connections, each one trigger (a fresh transport per client, so
	// each is its own connection).
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(cd.socket, "")
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var tr nudge.Trigger
			if err := c.do(ctx, "POST", "/v1/triggers", map[string]any{"trigger_id": fmt.Sprintf("many-%d", i),
				"workspace": "w1", "agent": fmt.Sprintf("a%d", i%4), "prompt": strings.Repeat("x", 2000)}, &tr); err == nil {
				answered.Add(1)
			}
		}()
	}
	// Another client is served while all that hangs.
	start := time.Now()
	cd.triggerAndWait("other", "b", file+".b", 30*time.Second)
	t.Logf("the other client's trigger was delivered in %s", time.Since(start).Round(time.Millisecond))
	wg.Wait()
	if answered.Load() != 200 {
		t.Fatalf("%d of 200 concurrent triggers answered", answered.Load())
	}
	busy := cd.metric("go_goroutines")
	for _, c := range bad {
		c.Close()
	}
	var ids []string
	for i := range 200 {
		ids = append(ids, fmt.Sprintf("many-%d", i))
	}
	t0 := time.Now()
	cd.waitClosed(ids, 120*time.Second)
	t.Logf("200 triggers closed %s after the last answer", time.Since(t0).Round(time.Millisecond))
	close(stopSampling)
	<-sampled
	var now float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		now = cd.metric("go_goroutines")
		if now <= base+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("RSS %d kB at start, peak %d kB; goroutines %.0f at baseline, %.0f with the bad clients, %.0f after", rss0, peak, base, busy, now)
	if now > base+10 {
		t.Errorf("goroutines did not return near the baseline: %.0f, baseline %.0f", now, base)
	}
	if peak > 256<<10 {
		t.Errorf("RSS peaked at %d kB", peak)
	}
}

// TestForeignEnvelopeInInputLineTimesOut: another trigger's envelope sits typed but never
// entered in the pane's input line (its trigger is long closed). Typing after it would
// merge the two prompts, so the trigger is held, and after the max defer window it falls
// back with DEFER_TIMEOUT instead of waiting forever (the hold once shared the collision
// gate's clock, which the idle operator kept resetting).
func TestForeignEnvelopeInInputLineTimesOut(t *testing.T) {
	cfg := faultConfig(t)
	cfg.Inject.MaxDefer = 2 * time.Second
	cfg.Monitor.QuietWindow = time.Second
	cfg.Inject.DeferRecheck = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	rt, file := td.catAgent("w1", "a")
	td.tmux("send-keys", "-t", rt.PaneID, "-l", "[BRIDGE_TRIGGER id=ghost thread=t reason=r] left over [/BRIDGE_TRIGGER]")
	td.waitPane(rt.PaneID, "the ghost envelope", func(s string) bool { return strings.Contains(s, "left over [/BRIDGE_TRIGGER]") })
	time.Sleep(cfg.Monitor.QuietWindow + 200*time.Millisecond) // the operator gate sees the pane idle again
	if _, err := td.trigger(map[string]any{"trigger_id": "after-ghost", "workspace": "w1", "agent": "a", "prompt": "do not merge me"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("after-ghost", closed)
	if got.ErrorCode != "DEFER_TIMEOUT" {
		t.Fatalf("receipt %s/%s/%s %q, want DEFER_TIMEOUT; audit: %s", got.State, got.ErrorCode, got.Fallback, got.Message, events(td.audit("after-ghost")))
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "do not merge me") {
		t.Fatalf("typed after the ghost envelope: %q", b)
	}
}
