package tui

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// daemonCall is one request the stand-in daemon got.
type daemonCall struct {
	method, path string
	body         map[string]any
}

// standinDaemon answers the dashboard's actions on a unix socket and records them.
type standinDaemon struct {
	mu    sync.Mutex
	calls []daemonCall
}

func (d *standinDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	d.mu.Lock()
	d.calls = append(d.calls, daemonCall{r.Method, r.URL.Path, body})
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/triggers":
		json.NewEncoder(w).Encode(api.Trigger{TriggerID: "tr_new", State: nudge.StateQueued})
	case strings.HasSuffix(r.URL.Path, "/answer"):
		json.NewEncoder(w).Encode(map[string]any{"option": map[string]string{"key": "1"}})
	default:
		json.NewEncoder(w).Encode(api.Runtime{})
	}
}

func (d *standinDaemon) last(t *testing.T) daemonCall {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.calls) == 0 {
		t.Fatal("no call reached the daemon")
	}
	return d.calls[len(d.calls)-1]
}

// testUI is a dashboard on a simulated 120x30 screen, fed a snapshot of three runtimes
// (rt_w.b waits on a dialog), its actions sent to a stand-in daemon; attaching is
// recorded, not run.
type testUI struct {
	*watchUI
	sim     tcell.SimulationScreen
	daemon  *standinDaemon
	attachd [][]string
}

func newTestUI(t *testing.T, getenv func(string) string) *testUI {
	t.Helper()
	dir, err := os.MkdirTemp("", "nw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	d := &standinDaemon{}
	srv := httptest.NewUnstartedServer(d)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	c := api.NewClient(filepath.Join(dir, "s"), "")
	t.Cleanup(c.Close)

	sim := tcell.NewSimulationScreen("")
	if err := sim.Init(); err != nil {
		t.Fatal(err)
	}
	sim.SetSize(120, 30)
	t.Cleanup(sim.Fini)
	ctx, cancel := context.WithCancel(context.Background())
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	tmux := func(args ...string) []string { return append([]string{"tmux", "-L", "nudge"}, args...) }
	ssh := func(host string, remote []string) []string { return append([]string{"ssh", "-t", host}, remote...) }
	ui := &testUI{watchUI: newWatchUI(ctx, Config{Client: c, Getenv: getenv, TmuxArgv: tmux, SSHArgv: ssh}, sim), sim: sim, daemon: d}
	ui.attachRun = func(argv []string) string { ui.attachd = append(ui.attachd, argv); return "attached" }
	t.Cleanup(func() { cancel(); ui.calls.Wait() })
	rt := func(role string) api.Runtime {
		return api.Runtime{Runtime: nudge.Runtime{RuntimeID: "rt_w." + role, WorkspaceID: "w", Role: role, Agent: "codex",
			Status: nudge.StatusReady, Readiness: nudge.Ready, PaneID: "%" + role}}
	}
	b := rt("b")
	b.Readiness = nudge.NeedsConfirmation
	b.Dialog = &nudge.Dialog{DialogID: "dlg1", Title: "Run rm?", Options: []nudge.DialogOption{{Key: "1", Label: "Yes"}, {Key: "2", Label: "Always"}, {Key: "3", Label: "No"}},
		ApproveKey: "1", DenyKey: "3"}
	ui.handle(watchConnected{watchSnapshot{runtimes: []api.Runtime{rt("a"), b, rt("c")}}})
	ui.view.draw()
	return ui
}

// press sends keys: a name in keyNames, else each rune of s; it reports a quit.
func (ui *testUI) press(keys ...string) (quit bool) {
	for _, k := range keys {
		if key, ok := keyNames[k]; ok {
			quit = ui.key(tcell.NewEventKey(key, 0, tcell.ModNone))
		} else {
			for _, r := range k {
				quit = ui.key(tcell.NewEventKey(tcell.KeyRune, r, tcell.ModNone))
			}
		}
		ui.view.draw()
	}
	return quit
}

var keyNames = map[string]tcell.Key{"Esc": tcell.KeyEscape, "Enter": tcell.KeyEnter, "Home": tcell.KeyHome, "End": tcell.KeyEnd,
	"Down": tcell.KeyDown, "Up": tcell.KeyUp, "Backspace": tcell.KeyBackspace2}

// result waits for the answer of an action and shows it.
func (ui *testUI) result(t *testing.T) string {
	t.Helper()
	for {
		select {
		case msg := <-ui.msgs:
			ui.handle(msg)
			if r, ok := msg.(watchResult); ok {
				ui.view.draw()
				return r.msg
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer from the action")
		}
	}
}

// screen is the simulated screen's text, one string per row.
func (ui *testUI) screen() []string {
	cells, w, h := ui.sim.GetContents()
	rows := make([]string, h)
	for y := range h {
		var b strings.Builder
		for x := range w {
			if r := cells[y*w+x].Runes; len(r) > 0 {
				b.WriteString(string(r))
			}
		}
		rows[y] = strings.TrimRight(b.String(), " ")
	}
	return rows
}

// rowOf is the screen row that shows s first (-1 none).
func (ui *testUI) rowOf(s string) int {
	for y, l := range ui.screen() {
		if strings.Contains(l, s) {
			return y
		}
	}
	return -1
}

func (ui *testUI) mouseAt(y int, b tcell.ButtonMask) {
	ui.mouse(tcell.NewEventMouse(5, y, b, tcell.ModNone))
	ui.view.draw()
}

func TestWatchKeysMoveAndGoBack(t *testing.T) {
	ui := newTestUI(t, nil)
	m := ui.m
	for i, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"G"}, "rt_w.c"}, {[]string{"g"}, "rt_w.a"}, {[]string{"End"}, "rt_w.c"}, {[]string{"Home"}, "rt_w.a"},
		{[]string{"j"}, "rt_w.b"}, {[]string{"k"}, "rt_w.a"},
	} {
		ui.press(c.keys...)
		if m.sel != c.want {
			t.Errorf("#%d: %v selected %q, want %q", i, c.keys, m.sel, c.want)
		}
	}
	// Esc never quits the list: it clears the filter.
	ui.press("/", "zzz", "Enter")
	if m.filter != "zzz" {
		t.Fatalf("filter %q", m.filter)
	}
	if ui.press("Esc") || m.filter != "" || m.page != pageList {
		t.Fatalf("Esc on the list: filter %q page %v", m.filter, m.page)
	}
	if ui.press("Esc") {
		t.Fatal("Esc quit the list")
	}
	// Enter opens, Esc and q go back, q on the list quits.
	ui.press("Enter")
	if m.page != pageRuntime {
		t.Fatalf("Enter: page %v", m.page)
	}
	if ui.press("Esc") || m.page != pageList {
		t.Fatalf("Esc on a runtime's page: page %v", m.page)
	}
	ui.press("Enter")
	if ui.press("q") || m.page != pageList {
		t.Fatalf("q on a runtime's page: page %v", m.page)
	}
	if !ui.press("q") {
		t.Fatal("q on the list did not quit")
	}
	if !ui.press(":", "q", "Enter") {
		t.Fatal(":q did not quit")
	}
}

func TestWatchMouse(t *testing.T) {
	ui := newTestUI(t, nil)
	m := ui.m
	y := ui.rowOf("rt_w.c")
	if y < 0 {
		t.Fatalf("rt_w.c not on screen:\n%s", strings.Join(ui.screen(), "\n"))
	}
	ui.mouseAt(y, tcell.Button1)
	ui.mouseAt(y, tcell.ButtonNone)
	if m.sel != "rt_w.c" || m.page != pageList {
		t.Fatalf("a click selected %q (page %v)", m.sel, m.page)
	}
	ui.mouseAt(y, tcell.WheelUp)
	if m.sel != "rt_w.b" {
		t.Fatalf("wheel up: %q", m.sel)
	}
	ui.mouseAt(y, tcell.WheelDown)
	if m.sel != "rt_w.c" {
		t.Fatalf("wheel down: %q", m.sel)
	}
	ui.mouseAt(y, tcell.Button1) // a second click on the selected row opens it
	if m.page != pageRuntime || m.sel != "rt_w.c" {
		t.Fatalf("second click: page %v sel %q", m.page, m.sel)
	}
	ui.mouseAt(y, tcell.Button1) // held: no new click
	if m.page != pageRuntime {
		t.Fatalf("a held button clicked again: page %v", m.page)
	}
}

func TestWatchActionsFromTheList(t *testing.T) {
	ui := newTestUI(t, nil)
	ui.press("G") // rt_w.c
	ui.press("t", "run the tests", "Enter")
	if r := ui.result(t); !strings.Contains(r, "sent tr_new to rt_w.c") {
		t.Fatalf("trigger: %q", r)
	}
	if c := ui.daemon.last(t); c.path != "/v1/triggers" || c.body["prompt"] != "run the tests" || c.body["workspace"] != "w" || c.body["agent"] != "c" {
		t.Fatalf("trigger call: %+v", c)
	}
	ui.press("p")
	ui.result(t)
	if c := ui.daemon.last(t); c.path != "/v1/runtimes/rt_w.c/pause" {
		t.Fatalf("pause call: %+v", c)
	}
	ui.press(":", "resume", "Enter")
	ui.result(t)
	if c := ui.daemon.last(t); c.path != "/v1/runtimes/rt_w.c/resume" {
		t.Fatalf("resume call: %+v", c)
	}
	ui.press("x", "Enter") // a stop needs a reason
	if ui.m.prompt == nil || !strings.Contains(ui.m.msg, "reason") {
		t.Fatalf("stop without a reason: prompt %v msg %q", ui.m.prompt, ui.m.msg)
	}
	ui.press("wedged", "Enter")
	ui.result(t)
	if c := ui.daemon.last(t); c.path != "/v1/runtimes/rt_w.c/stop" || c.body["reason"] != "wedged" {
		t.Fatalf("stop call: %+v", c)
	}
	// rt_w.b's dialog: y approves with its approve option, n denies, from the list.
	ui.press("k")
	if ui.rowOf("asks: Run rm?") < 0 {
		t.Fatalf("the dialog is not on the list:\n%s", strings.Join(ui.screen(), "\n"))
	}
	ui.press("y", "looks safe", "Enter")
	ui.result(t)
	if c := ui.daemon.last(t); c.path != "/v1/runtimes/rt_w.b/answer" || c.body["choice"] != "1" || c.body["dialog_id"] != "dlg1" || c.body["reason"] != "looks safe" {
		t.Fatalf("approve call: %+v", c)
	}
	ui.press(":", "deny not today", "Enter")
	ui.result(t)
	if c := ui.daemon.last(t); c.body["choice"] != "3" || c.body["reason"] != "not today" {
		t.Fatalf("deny call: %+v", c)
	}
	ui.press("g", "y") // rt_w.a has no dialog: nothing is sent
	if !strings.Contains(ui.m.msg, "no dialog") || ui.m.answering != nil {
		t.Fatalf("approve without a dialog: %q", ui.m.msg)
	}
}

func TestWatchTail(t *testing.T) {
	ui := newTestUI(t, nil)
	ui.press("l")
	if ui.m.page != pageTail {
		t.Fatalf("l: page %v", ui.m.page)
	}
	var lines []string
	for i := range 60 {
		lines = append(lines, "line "+string(rune('A'+i%26))+string(rune('a'+i/26)))
	}
	ui.handle(watchDetail{id: "rt_w.a", tail: lines, capturedAt: time.Now()})
	ui.view.draw()
	if ui.rowOf(lines[59]) != 27 || ui.rowOf("Screen (live") != 2 {
		t.Fatalf("the tail does not end at the bottom:\n%s", strings.Join(ui.screen(), "\n"))
	}
	ui.press("k", "k")
	if ui.rowOf(lines[57]) != 27 || ui.rowOf("2 lines back") != 1 {
		t.Fatalf("scrolled back two:\n%s", strings.Join(ui.screen(), "\n"))
	}
	ui.press("G")
	if ui.m.tailOff != 0 {
		t.Fatalf("G: %d lines back", ui.m.tailOff)
	}
	if ui.press("Esc"); ui.m.page != pageList {
		t.Fatalf("Esc from the tail: page %v", ui.m.page)
	}
}

func TestWatchAttachAnyServer(t *testing.T) {
	for i, c := range []struct {
		socket, host string
		want         string
	}{
		{"", "", "tmux -L nudge attach-session -t %a"},
		{"default", "", "tmux -L default attach-session -t %a"},
		{"/run/user/1000/tmux-1000/work", "", "tmux -S /run/user/1000/tmux-1000/work attach-session -t %a"},
		{"", "me@box", "ssh -t me@box tmux -L nudge attach-session -t %a"},
	} {
		ui := newTestUI(t, nil)
		rt, _ := ui.m.fleet.Runtime("rt_w.a")
		rt.TmuxSocket, rt.Host = c.socket, c.host
		ui.m.fleet.PutRuntime(rt)
		ui.press("a")
		if len(ui.attachd) != 1 || strings.Join(ui.attachd[0], " ") != c.want {
			t.Errorf("#%d: attached %q, want %q", i, ui.attachd, c.want)
		}
	}
	ui := newTestUI(t, nil)
	ui.ssh = nil
	rt, _ := ui.m.fleet.Runtime("rt_w.a")
	rt.Host = "me@box"
	ui.m.fleet.PutRuntime(rt)
	ui.press("a")
	if len(ui.attachd) != 0 || !strings.Contains(ui.m.msg, "nudge attach w --host me@box") {
		t.Errorf("a host without ssh: attached %q, msg %q", ui.attachd, ui.m.msg)
	}
	rt.Host, rt.PaneID, rt.Target = "", "", ""
	ui.m.fleet.PutRuntime(rt)
	ui.press("a")
	if len(ui.attachd) != 0 || !strings.Contains(ui.m.msg, "has no pane") {
		t.Errorf("no pane: attached %q, msg %q", ui.attachd, ui.m.msg)
	}
}
