package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nudgehq/nudge"
)

// tcpProxy forwards a loopback port to target until Cut: then every link is closed and
// new ones are refused until Restore. It stands between a member and its hub.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Cut(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, up); c.Close() }()
	}
}

// Cut closes every link through the proxy and refuses new ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *tcpProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func writePrivate(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testFleet is a hub daemon and members a, b and c, each a real `nudge serve` process
// with its own state dir, socket, tmux server and identity; a reaches the hub through a
// proxy the test cuts.
type testFleet struct {
	hub, a, b, c *chaosDaemon
	proxy        *tcpProxy
	hubAddr      string
	users        string // the hub's --hub-users file
}

// startFleet starts the fleet; aState, if not "", is member a's state dir (its log goes
// elsewhere).
func startFleet(t *testing.T, aState string) *testFleet {
	t.Helper()
	bin := buildChaosNudge(t)
	dir := privateTempDir(t)
	fl := &testFleet{hubAddr: freeAddr(t)}
	users := writePrivate(t, dir, "users", "a pw-a-0123456789\nb pw-b-0123456789\nc pw-c-0123456789\n")
	fl.users = users
	common := []string{"--rate-limit", "100000/min", "--hub-heartbeat", "200ms", "--submit-quiet", "100ms"}
	fl.hub = newChaosDaemon(t, bin, append(common, "--hub-listen", fl.hubAddr, "--host-name", "hub", "--hub-users", users)...)
	fl.hub.start()
	fl.proxy = startProxy(t, fl.hubAddr)
	fl.a = newChaosDaemon(t, bin, append(common, "--hub", "nats://"+fl.proxy.Addr(), "--host-name", "a",
		"--hub-credentials", writePrivate(t, dir, "a.cred", "a pw-a-0123456789\n"))...)
	if aState != "" {
		fl.a.stateDir, fl.a.logPath = aState, filepath.Join(dir, "a.log")
	}
	fl.b = newChaosDaemon(t, bin, append(common, "--hub", "nats://"+fl.hubAddr, "--host-name", "b",
		"--hub-credentials", writePrivate(t, dir, "b.cred", "b pw-b-0123456789\n"))...)
	fl.c = newChaosDaemon(t, bin, append(common, "--hub", "nats://"+fl.hubAddr, "--host-name", "c",
		"--hub-credentials", writePrivate(t, dir, "c.cred", "c pw-c-0123456789\n"))...)
	fl.a.start()
	fl.b.start()
	fl.c.start()
	return fl
}

// deliveredOnce waits until every trigger of ids has a closed receipt on via and counts,
// from file (what a's pane read), those lost, given twice, and failed or still open.
func deliveredOnce(t *testing.T, fl *testFleet, via *chaosDaemon, ids []string, file string) (lost, twice, notClosed int) {
	t.Helper()
	got := map[string]nudge.Trigger{}
	for deadline := time.Now().Add(2 * time.Minute); len(got) < len(ids) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, id := range ids {
			if _, ok := got[id]; ok {
				continue
			}
			if tr, err := via.getTrigger(id); err == nil && tr.Closed {
				got[id] = tr
			}
		}
	}
	counts := countIDs(file)
	for _, id := range ids {
		switch c := counts[id]; {
		case c == 0:
			lost++
		case c > 1:
			twice++
			t.Logf("%s given %d times", id, c)
		}
		if tr, ok := got[id]; !ok || tr.State == nudge.StateFailed {
			notClosed++
			var here nudge.Trigger
			herr := fl.a.call("GET", "/v1/triggers/"+id, nil, &here)
			t.Logf("%s: %+v; on a %s (closed %v), err %v", id, got[id], here.State, here.Closed, herr)
		}
	}
	return lost, twice, notClosed
}

// catRuntime spawns a shell runtime that appends every line it reads to a file.
func catRuntime(cd *chaosDaemon, ws string) (runtimeView, string) {
	file := filepath.Join(cd.root, ws+".lines")
	rt := cd.spawn(spawnBody{Workspace: ws, Role: "w", Agent: "shell", Argv: []string{"sh", "-c", "exec cat >> " + file}})
	return rt, file
}

// seesRuntime waits until cd lists runtime id (another host's, through the hub).
func seesRuntime(t *testing.T, cd *chaosDaemon, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var rts []runtimeView
		if err := cd.call("GET", "/v1/runtimes", nil, &rts); err == nil {
			for _, rt := range rts {
				if rt.RuntimeID == id {
					return
				}
			}
		}
	}
	t.Fatalf("%s never listed runtime %s\n%s", cd.stateDir, id, cd.logTail(3000))
}

// TestFleetKill9AndCut: triggers for a's workspace are sent through b and the hub while a
// is killed with kill -9 and restarted, while a's link to the hub is cut and restored, and
// while the hub is killed with kill -9 and restarted (a sender retries the same id while
// it is answered UNAVAILABLE or not at all). Every trigger is delivered once: 0 lost, 0
// given twice.
func TestFleetKill9AndCut(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	rt, file := catRuntime(fl.a, "wa")
	rtc, fileC := catRuntime(fl.c, "wc")
	seesRuntime(t, fl.b, rt.RuntimeID)
	seesRuntime(t, fl.hub, rt.RuntimeID)
	seesRuntime(t, fl.b, rtc.RuntimeID)

	var retried atomic.Int64 // requests sent again (no answer, or UNAVAILABLE)
	var ids, idsC []string   // a's and c's
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	sent := make(chan error, 1)
	go func() { // sends until the chaos below is over
		for i := 0; ; i++ {
			select {
			case <-stop:
				sent <- nil
				return
			default:
			}
			id := fmt.Sprintf("fl-%04d", i)
			via := fl.b
			if i%3 == 0 {
				via = fl.hub
			}
			ws, host := "wa", "a"
			if i%4 == 3 {
				ws, host = "wc", "c"
			}
			req := map[string]any{"trigger_id": id, "workspace": ws, "agent": "w", "prompt": fmt.Sprintf("fleet prompt %d", i)}
			tr, tries, err := via.submitRetry(ctx, req)
			retried.Add(int64(tries - 1))
			if err != nil {
				sent <- fmt.Errorf("trigger %s: %w", id, err)
				return
			}
			if tr.Host != host {
				sent <- fmt.Errorf("trigger %s: host %q, want %s", id, tr.Host, host)
				return
			}
			if host == "c" {
				idsC = append(idsC, id)
			} else {
				ids = append(ids, id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	fl.a.kill9() // mid-stream: triggers queue in the hub while it is away
	time.Sleep(500 * time.Millisecond)
	fl.a.start()
	time.Sleep(300 * time.Millisecond)
	fl.proxy.Cut() // a is cut off: the hub keeps its triggers
	time.Sleep(time.Second)
	fl.proxy.Restore()
	time.Sleep(300 * time.Millisecond)
	fl.hub.kill9() // the hub itself: what it queued is on its disk
	time.Sleep(300 * time.Millisecond)
	fl.hub.start()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	n := len(ids) + len(idsC)
	lost, twice, failed := deliveredOnce(t, fl, fl.b, ids, file)
	lostC, twiceC, failedC := deliveredOnce(t, fl, fl.b, idsC, fileC)
	lost, twice, failed = lost+lostC, twice+twiceC, failed+failedC
	t.Logf("fleet: %d triggers through the hub (%d to a, %d to c), a killed (kill -9) once and cut once, the hub killed once (%d requests sent again): %d lost, %d given twice, %d not closed well", n, len(ids), len(idsC), retried.Load(), lost, twice, failed)
	if lost != 0 || twice != 0 || failed != 0 {
		t.Fatalf("%d lost, %d given twice, %d failed or open\na:\n%s", lost, twice, failed, fl.a.logTail(4000))
	}
}

// TestFleetScopes: a token scoped to one workspace acts on it through the hub wherever
// it lives and on nothing else; a member's credentials publish nothing for another.
func TestFleetScopes(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	rta, _ := catRuntime(fl.a, "wa")
	rth, _ := catRuntime(fl.hub, "wh")
	seesRuntime(t, fl.b, rta.RuntimeID)
	seesRuntime(t, fl.b, rth.RuntimeID)

	var issued struct {
		Token string `json:"token"`
	}
	if err := fl.b.call("POST", "/v1/tokens", issueBody{Subject: "orch", Workspaces: []string{"wa"}, Verbs: []string{"trigger"}}, &issued); err != nil {
		t.Fatalf("issue: %v", err)
	}
	orch := newClient(fl.b.socket, issued.Token)
	var tr nudge.Trigger
	if err := orch.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "sc-1", "workspace": "wa", "agent": "w", "prompt": "hi"}, &tr); err != nil || tr.Host != "a" {
		t.Fatalf("in scope, on another host: %+v %v", tr, err)
	}
	err := orch.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "sc-2", "workspace": "wh", "agent": "w", "prompt": "hi"}, nil)
	wantAPIError(t, "another workspace through the hub", err, "FORBIDDEN", `"wh"`)
	// A trigger of wh sent by an admin on the hub: the scoped token cannot read it on b.
	if err := fl.hub.call("POST", "/v1/triggers", map[string]any{"trigger_id": "sc-3", "workspace": "wh", "agent": "w", "prompt": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.b.getTrigger("sc-3"); err != nil {
		t.Fatalf("b's admin reads the hub's trigger: %v", err) // the fleet's receipts
	}
	err = orch.do(bg(), "GET", "/v1/triggers/sc-3", nil, nil)
	wantAPIError(t, "another workspace's receipt", err, "NOT_FOUND", "sc-3")
	// The list is the fleet's: b's admin lists what b routed (sc-1, held by a), what the
	// hub and a took themselves (sc-3, sc-4); the scoped token lists only wa's.
	if err := fl.a.call("POST", "/v1/triggers", map[string]any{"trigger_id": "sc-4", "workspace": "wa", "agent": "w", "prompt": "y"}, nil); err != nil {
		t.Fatal(err)
	}
	listed := func(c *client) map[string]string {
		var ts []nudge.Trigger
		if err := c.do(bg(), "GET", "/v1/triggers", nil, &ts); err != nil {
			t.Fatal(err)
		}
		hosts := map[string]string{}
		for _, tr := range ts {
			hosts[tr.TriggerID] = tr.Host
		}
		return hosts
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := listed(fl.b.c)
		if got["sc-1"] == "a" && got["sc-3"] == "hub" && got["sc-4"] == "a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's admin lists %v, want sc-1 and sc-4 on a, sc-3 on the hub", got)
		}
	}
	if got := listed(orch); got["sc-1"] != "a" || got["sc-4"] != "a" || len(got) != 2 {
		t.Fatalf("the scoped token lists %v, want sc-1 and sc-4 (wa's) only", got)
	}
	var rts []runtimeView
	if err := orch.do(bg(), "GET", "/v1/runtimes", nil, &rts); err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts {
		if rt.WorkspaceID != "wa" {
			t.Fatalf("the scoped token lists %s", rt.RuntimeID)
		}
	}
	if len(rts) != 1 {
		t.Fatalf("the scoped token lists %d runtimes, want wa's one", len(rts))
	}

	// b's identity, used by hand: nothing it publishes can pass for a.
	nc, err := nats.Connect("nats://"+fl.hubAddr, nats.UserInfo("b", "pw-b-0123456789"), nats.CustomInboxPrefix("_INBOX_b"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, subj := range []string{"$KV.nudge_runtimes.a", "$KV.nudge_receipts.a.sc-1", "$KV.nudge_ws.wa",
		"nudge.trig.a.b", "nudge.trig.hub.a", "nudge.api.a.receipt", "nudge.ctl.a.hub.get", "nudge.deliver.a",
		"$JS.API.DIRECT.GET.KV_nudge_runtimes.$KV.nudge_runtimes.b", "$JS.API.CONSUMER.CREATE.NUDGE_TRIGGERS.host_a.nudge.trig.a.*"} {
		if _, err := nc.Request(subj, []byte(`{}`), 500*time.Millisecond); err == nil {
			t.Errorf("b's credentials were answered on %s", subj)
		}
	}
	// Nor can b have the hub answer onto a workspace's claim (a reply not to b's own inbox).
	m := nats.NewMsg("nudge.api.b.get")
	m.Data, m.Reply = []byte(`{"Host":"b","ID":"x"}`), "$KV.nudge_ws.wa"
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	// The workspace stays a's: b's own listing of it would not move it either.
	seesRuntime(t, fl.b, rta.RuntimeID)
}

// TestFleetMemberDiskFull: member a's state dir fills up while triggers for its workspace
// come through b and the hub. While a's store cannot write, a does not take them (the hub
// keeps them and hands them over again); once space returns each is delivered: 0 lost, 0
// given twice, every receipt closed.
func TestFleetMemberDiskFull(t *testing.T) {
	t.Parallel()
	full := smallTmpfs(t, "400k") // first: unmounted after a is stopped
	fl := startFleet(t, full)
	// A raw tty: a 30 KiB prompt reaches cat whole (a cooked one keeps 4 KiB of a line).
	file := filepath.Join(fl.a.root, "wa.bytes")
	rt := fl.a.spawn(spawnBody{Workspace: "wa", Role: "w", Agent: "shell", Argv: []string{"sh", "-c", "stty raw; exec cat >> " + file}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the raw cat never started: %v", err)
		}
	}
	seesRuntime(t, fl.b, rt.RuntimeID)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prompt := func(i int) string {
		return fmt.Sprintf("prompt %d ", i) + strings.Repeat(string(rune('a'+i%26)), 30<<10)
	}
	refusedBefore := func() int { return strings.Count(fl.a.log(), "the pipeline did not take a trigger") }
	var ids []string
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("fd-%02d", i)
		tr, _, err := fl.b.submitRetry(ctx, map[string]any{"trigger_id": id, "workspace": "wa", "agent": "w", "prompt": prompt(i)})
		if err != nil {
			t.Fatalf("trigger %s through the hub: %v", id, err)
		}
		if tr.Host != "a" {
			t.Fatalf("trigger %s: host %q, want a", id, tr.Host)
		}
		ids = append(ids, id)
		if refusedBefore() > 0 && i >= 20 {
			break // a's disk is full and the hub holds what a cannot take
		}
		time.Sleep(20 * time.Millisecond)
	}
	refused := refusedBefore()
	if refused == 0 {
		t.Fatalf("a's disk never filled up: every trigger was taken\n%s", fl.a.logTail(3000))
	}
	time.Sleep(3 * time.Second) // the hub hands them over again while the disk is still full
	if out, err := exec.Command("mount", "-o", "remount,size=16m", full).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	lost, twice, notClosed := deliveredOnce(t, fl, fl.b, ids, file)
	t.Logf("fleet, a member's disk full: %d triggers through the hub, a refused to take one %d times while full: %d lost, %d given twice, %d not closed well",
		len(ids), refusedBefore(), lost, twice, notClosed)
	if lost != 0 || twice != 0 || notClosed != 0 {
		t.Fatalf("%d lost, %d given twice, %d failed or open (refused while full: %d)\na:\n%s", lost, twice, notClosed, refused, fl.a.logTail(4000))
	}
}

// TestFleetMembersChangedLive: the hub's users file is edited while everything runs. b
// taken out: its link is closed, its runtime leaves the fleet, a trigger for its
// workspace never reaches it. b put back (the file replaced by a rename, as editors do):
// it joins again by itself and a trigger through the hub reaches its pane once. No
// daemon is restarted.
func TestFleetMembersChangedLive(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	rt, file := catRuntime(fl.b, "wb")
	seesRuntime(t, fl.hub, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := os.WriteFile(fl.users, []byte("a pw-a-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var rts []runtimeView
		if err := fl.hub.call("GET", "/v1/runtimes", nil, &rts); err == nil && !slices.ContainsFunc(rts, func(r runtimeView) bool { return r.RuntimeID == rt.RuntimeID }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's runtime still listed on the hub after b was taken out\n%s", fl.hub.logTail(3000))
		}
	}
	if !strings.Contains(fl.b.log(), "hub link down") {
		t.Errorf("b's link was not closed when it was taken out\n%s", fl.b.logTail(2000))
	}
	if tr, _, err := fl.hub.submitRetry(ctx, map[string]any{"trigger_id": "out-1", "workspace": "wb", "agent": "w", "prompt": "while out"}); err == nil && tr.Host == "b" {
		t.Fatalf("a trigger for b's workspace went to b after it was taken out: %+v", tr)
	}

	next := writePrivate(t, filepath.Dir(fl.users), "users.new", "a pw-a-0123456789\nb pw-b-0123456789\n")
	if err := os.Rename(next, fl.users); err != nil {
		t.Fatal(err)
	}
	seesRuntime(t, fl.hub, rt.RuntimeID)
	tr, _, err := fl.hub.submitRetry(ctx, map[string]any{"trigger_id": "back-1", "workspace": "wb", "agent": "w", "prompt": "back again"})
	if err != nil || tr.Host != "b" {
		t.Fatalf("trigger for b's workspace once b is back: %+v, %v\n%s", tr, err, fl.hub.logTail(3000))
	}
	lost, twice, notClosed := deliveredOnce(t, fl, fl.hub, []string{"back-1"}, file)
	if lost != 0 || twice != 0 || notClosed != 0 {
		t.Fatalf("back-1: lost %d, twice %d, not closed %d\nb:\n%s", lost, twice, notClosed, fl.b.logTail(3000))
	}
	if n := countIDs(file)["out-1"]; n != 0 {
		t.Fatalf("the trigger sent while b was out reached it %d times", n)
	}
}

// TestFleetActsOnAnotherHost: from member b, an admin reads the screen of a runtime on a,
// pauses it (a trigger for it waits), resumes it (the trigger is delivered once), stops
// and restarts it, all through the hub; a's own record names b as who asked. A token
// scoped to another workspace cannot do any of it.
func TestFleetActsOnAnotherHost(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	file := filepath.Join(fl.a.root, "wa.lines")
	rt := fl.a.spawn(spawnBody{Workspace: "wa", Role: "w", Agent: "shell", Argv: []string{"sh", "-c", "echo HELLO-FROM-A; exec cat >> " + file}})
	seesRuntime(t, fl.b, rt.RuntimeID)
	base := "/v1/runtimes/" + rt.RuntimeID

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var tail struct {
			Lines []string `json:"lines"`
		}
		err := fl.b.call("GET", base+"/tail?lines=20", nil, &tail)
		if err == nil && strings.Contains(strings.Join(tail.Lines, "\n"), "HELLO-FROM-A") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never read a's screen: %v %q", err, tail.Lines)
		}
	}

	var view runtimeView
	if err := fl.b.call("POST", base+"/pause", map[string]string{"reason": "hold on"}, &view); err != nil {
		t.Fatalf("pause through the hub: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, _, err := fl.b.submitRetry(ctx, map[string]any{"trigger_id": "act-1", "workspace": "wa", "agent": "w", "prompt": "after the pause"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // long enough for a delivery, were it not paused
	if n := countIDs(file)["act-1"]; n != 0 {
		t.Fatalf("a paused runtime was given act-1 %d times", n)
	}
	if err := fl.b.call("POST", base+"/resume", nil, &view); err != nil {
		t.Fatalf("resume through the hub: %v", err)
	}
	if lost, twice, notClosed := deliveredOnce(t, fl, fl.b, []string{"act-1"}, file); lost+twice+notClosed != 0 {
		t.Fatalf("act-1 after the resume: lost %d, twice %d, not closed %d", lost, twice, notClosed)
	}
	var issued struct {
		Token string `json:"token"`
	}
	if err := fl.b.call("POST", "/v1/tokens", issueBody{Subject: "other", Workspaces: []string{"wb"}, Verbs: []string{"spawn", "admin", "read"}}, &issued); err != nil {
		t.Fatal(err)
	}
	other := newClient(fl.b.socket, issued.Token)
	for _, op := range []string{"stop", "restart", "pause"} {
		if err := other.do(bg(), "POST", base+"/"+op, nil, nil); err == nil {
			t.Fatalf("a token of wb could %s a runtime of wa on another host", op)
		}
	}
	if err := other.do(bg(), "GET", base+"/tail", nil, nil); err == nil {
		t.Fatal("a token of wb read the screen of a runtime of wa on another host")
	}

	if err := fl.b.call("POST", base+"/stop", map[string]string{"reason": "done"}, &view); err != nil {
		t.Fatalf("stop through the hub: %v", err)
	}
	var here runtimeView
	if err := fl.a.call("GET", base, nil, &here); err != nil || here.Status != nudge.StatusOffline {
		t.Fatalf("on a after the stop: %+v %v", here, err)
	}
	if err := fl.b.call("POST", base+"/restart", nil, &view); err != nil {
		t.Fatalf("restart through the hub: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := fl.a.call("GET", base, nil, &here); err == nil && here.Status == nudge.StatusReady {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("on a after the restart: %+v %v", here, err)
		}
	}
	if log := fl.a.log(); !strings.Contains(log, "hub: an act on a runtime here") || !strings.Contains(log, "from=b") {
		t.Errorf("a's log does not say b asked")
	}

	// A spawn in a's workspace, asked on b: it runs on a, in a's directory.
	if err := other.do(bg(), "POST", "/v1/runtimes", spawnBody{Workspace: "wa", Role: "w3", Agent: "shell", Argv: []string{"sh", "-c", "sleep 600"}}, nil); err == nil {
		t.Fatal("a token of wb spawned in wa through the hub")
	}
	var spawned runtimeView
	if err := fl.b.call("POST", "/v1/runtimes", spawnBody{Workspace: "wa", Role: "w2", Agent: "shell", Argv: []string{"sh", "-c", "sleep 600"}}, &spawned); err != nil {
		t.Fatalf("spawn in a's workspace from b: %v", err)
	}
	if err := fl.a.call("GET", "/v1/runtimes/rt_wa.w2", nil, &here); err != nil || here.Host != "" || !strings.HasPrefix(here.Dir, fl.a.root) {
		t.Fatalf("the runtime spawned from b, on a: %+v %v", here, err)
	}
	if err := fl.b.call("GET", "/v1/runtimes/rt_wa.w2", nil, nil); err != nil {
		seesRuntime(t, fl.b, "rt_wa.w2")
	}
}

// TestFleetOverWebSocket: a member that can only reach the hub over WebSocket (ws://, as
// behind an HTTPS ingress that ends TLS) joins the fleet, and a trigger sent on the hub for
// its workspace reaches its pane once.
func TestFleetOverWebSocket(t *testing.T) {
	t.Parallel()
	bin := buildChaosNudge(t)
	dir := privateTempDir(t)
	users := writePrivate(t, dir, "users", "w pw-w-0123456789\n")
	wsAddr := freeAddr(t)
	common := []string{"--rate-limit", "100000/min", "--hub-heartbeat", "200ms", "--submit-quiet", "100ms"}
	hub := newChaosDaemon(t, bin, append(common, "--hub-listen", freeAddr(t), "--hub-websocket", wsAddr, "--host-name", "hub", "--hub-users", users)...)
	hub.start()
	w := newChaosDaemon(t, bin, append(common, "--hub", "ws://"+wsAddr, "--host-name", "w",
		"--hub-credentials", writePrivate(t, dir, "w.cred", "w pw-w-0123456789\n"))...)
	w.start()
	rt, file := catRuntime(w, "ww")
	seesRuntime(t, hub, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr, _, err := hub.submitRetry(ctx, map[string]any{"trigger_id": "ws-1", "workspace": "ww", "agent": "w", "prompt": "over a websocket"})
	if err != nil || tr.Host != "w" {
		t.Fatalf("trigger for w's workspace: %+v %v", tr, err)
	}
	for deadline := time.Now().Add(30 * time.Second); countIDs(file)["ws-1"] == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ws-1 never reached w's pane\n%s", w.logTail(3000))
		}
	}
	time.Sleep(500 * time.Millisecond)
	if n := countIDs(file)["ws-1"]; n != 1 {
		t.Fatalf("ws-1 reached w's pane %d times", n)
	}
}

// TestFleetEvents: every host's events reach every member's /v1/events with their host;
// a token scoped to one workspace sees only its events there; a member cannot put an
// event of a workspace another host holds on the others' streams.
func TestFleetEvents(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	rta, _ := catRuntime(fl.a, "wa")
	rtc, _ := catRuntime(fl.c, "wc")
	seesRuntime(t, fl.b, rta.RuntimeID)
	seesRuntime(t, fl.b, rtc.RuntimeID)

	// c's own identity, used by hand: an event of a's workspace under c's name.
	nc, err := nats.Connect("nats://"+fl.hubAddr, nats.UserInfo("c", "pw-c-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("nudge.ev.c", []byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"alert","workspace":"wa","detail":{"forged":"by c"}}`)); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := fl.hub.submitRetry(ctx, map[string]any{"trigger_id": "ev-c", "workspace": "wc", "agent": "w", "prompt": "to c"}); err != nil {
		t.Fatal(err)
	}

	type seen struct{ host, ws, typ, trigger string }
	read := func(cd *chaosDaemon, token string) ([]seen, string) {
		hdr := map[string]string{}
		if token != "" {
			hdr["Authorization"] = "Bearer " + token
		}
		resp, err := unixGet(ctx, cd.socket, "/v1/events?since=0&follow=0", hdr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s /v1/events: %s %s", cd.stateDir, resp.Status, body)
		}
		var out []seen
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var ev struct {
				Host, Workspace, Type string
				Trigger               struct {
					TriggerID string `json:"trigger_id"`
				}
			}
			if json.Unmarshal([]byte(line), &ev) == nil {
				out = append(out, seen{ev.Host, ev.Workspace, ev.Type, ev.Trigger.TriggerID})
			}
		}
		return out, string(body)
	}
	has := func(evs []seen, want seen) bool {
		for _, e := range evs {
			if e.host == want.host && e.ws == want.ws && e.typ == want.typ && (want.trigger == "" || e.trigger == want.trigger) {
				return true
			}
		}
		return false
	}
	for _, cd := range []*chaosDaemon{fl.b, fl.hub} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			evs, _ := read(cd, "")
			// The hub routed ev-c: its stream has its own copy of the receipt; b has c's.
			if has(evs, seen{"a", "wa", "runtime", ""}) && (cd == fl.hub || has(evs, seen{"c", "wc", "trigger", "ev-c"})) {
				break
			}
			if time.Now().After(deadline) {
				_, body := read(cd, "")
				t.Fatalf("%s's events never showed a's runtime and c's trigger:\n%.3000s", cd.stateDir, body)
			}
		}
	}
	evs, body := read(fl.b, "")
	if has(evs, seen{"c", "wa", "alert", ""}) {
		t.Fatalf("c put an event of a's workspace on b's stream:\n%.3000s", body)
	}
	var issued struct {
		Token string `json:"token"`
	}
	if err := fl.b.call("POST", "/v1/tokens", issueBody{Subject: "orch", Workspaces: []string{"wc"}, Verbs: []string{"read"}}, &issued); err != nil {
		t.Fatal(err)
	}
	scoped, body := read(fl.b, issued.Token)
	if !has(scoped, seen{"c", "wc", "trigger", "ev-c"}) {
		t.Fatalf("the wc token does not see c's trigger on b:\n%.3000s", body)
	}
	for _, e := range scoped {
		if e.ws != "wc" {
			t.Fatalf("the wc token sees an event of %q on b: %+v", e.ws, e)
		}
	}
}

// TestFleetAudit: each host's audit records reach the hub, checked against the host's
// chain: the hub's copy of a's records is a's own, record for record; a record sent in a's
// name that rewrites one the hub keeps, or breaks the chain, is refused and the copy stays
// as it was; the copy is read on the hub (an unrestricted caller only), not on a member.
func TestFleetAudit(t *testing.T) {
	t.Parallel()
	fl := startFleet(t, "")
	rt, _ := catRuntime(fl.a, "wa")
	seesRuntime(t, fl.b, rt.RuntimeID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := fl.b.submitRetry(ctx, map[string]any{"trigger_id": "au-1", "workspace": "wa", "agent": "w", "prompt": "audited"}); err != nil {
		t.Fatal(err)
	}
	fl.a.waitClosed([]string{"au-1"}, time.Minute)
	var own []nudge.AuditRecord
	if err := fl.a.call("GET", "/v1/audit", nil, &own); err != nil || len(own) == 0 {
		t.Fatalf("a's audit: %d, %v", len(own), err)
	}
	last := own[len(own)-1]
	var copy []nudge.AuditRecord
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		copy = nil
		if err := fl.hub.call("GET", "/v1/audit?host=a", nil, &copy); err == nil && len(copy) > 0 && copy[len(copy)-1].Seq >= last.Seq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub's copy of a's audit holds %d records, a's last is %d\n%s", len(copy), last.Seq, fl.hub.logTail(2000))
		}
	}
	bySeq := map[uint64]string{}
	for _, r := range copy {
		bySeq[r.Seq] = r.Hash
	}
	for _, r := range own {
		if bySeq[r.Seq] != r.Hash {
			t.Fatalf("record %d: the hub keeps hash %q, a has %q", r.Seq, bySeq[r.Seq], r.Hash)
		}
	}

	// a's identity, used by hand: a rewritten first record, and one that breaks the chain.
	nc, err := nats.Connect("nats://"+fl.hubAddr, nats.UserInfo("a", "pw-a-0123456789"), nats.CustomInboxPrefix("_INBOX_a"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged := own[0]
	forged.Reason = "nothing happened here"
	next := nudge.AuditRecord{Seq: copy[len(copy)-1].Seq + 1, Time: time.Now(), Event: "runtime_spawned", PrevHash: "0000", Hash: "ffff"}
	for name, rec := range map[string]nudge.AuditRecord{"rewritten": forged, "off the chain": next} {
		b, _ := json.Marshal(rec)
		list, _ := json.Marshal([]json.RawMessage{b})
		req, _ := json.Marshal(map[string]any{"Data": json.RawMessage(list)})
		m, err := nc.Request("nudge.api.a.audit", req, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(string(m.Data), `"Err"`) {
			t.Fatalf("%s record taken by the hub: %s", name, m.Data)
		}
	}
	var after []nudge.AuditRecord
	if err := fl.hub.call("GET", "/v1/audit?host=a", nil, &after); err != nil {
		t.Fatal(err)
	}
	for _, r := range after {
		if r.Seq == forged.Seq && r.Reason == forged.Reason || r.Hash == "ffff" {
			t.Fatalf("the hub's copy took a forged record: %+v", r)
		}
	}
	if err := fl.b.call("GET", "/v1/audit?host=a", nil, nil); err == nil || !strings.Contains(err.Error(), "hub") {
		t.Fatalf("a member read another host's records: %v", err)
	}
	var issued struct {
		Token string `json:"token"`
	}
	if err := fl.hub.call("POST", "/v1/tokens", issueBody{Subject: "orch", Workspaces: []string{"wa"}, Verbs: []string{"read"}}, &issued); err != nil {
		t.Fatal(err)
	}
	if err := newClient(fl.hub.socket, issued.Token).do(bg(), "GET", "/v1/audit?host=a", nil, nil); err == nil {
		t.Fatal("a workspace token read a host's audit copy on the hub")
	}
}
