package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// watchOps starts an operator's session "ops" on the daemon's tmux server, attached
// through a PTY of cols x rows, runs `nudge watch` in it (with envPrefix before it, e.g.
// "env -u TMUX") and waits for the list. It returns the pane and the PTY.
func watchOps(t *testing.T, td *testDaemon, bin, envPrefix string, cols, rows uint16) (string, *os.File) {
	t.Helper()
	pane, f := opsShell(t, td, cols, rows)
	td.tmux("send-keys", "-t", pane, "-l", strings.TrimSpace(envPrefix+" "+bin)+" watch --socket "+td.cfg.Socket+" --tmux-socket "+td.cfg.Panes.SocketName+"; echo WATCH-EXIT-$?")
	td.tmux("send-keys", "-t", pane, "Enter")
	td.waitPane(pane, "the list", func(s string) bool { return strings.Contains(s, "LAST RECEIPT") && strings.Contains(s, "[live]") })
	return pane, f
}

// opsShell starts the operator's session "ops" (a shell) on the daemon's tmux server,
// attached through a PTY of cols x rows, and returns its pane and the PTY.
func opsShell(t *testing.T, td *testDaemon, cols, rows uint16) (string, *os.File) {
	t.Helper()
	td.tmux("new-session", "-d", "-s", "ops", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "env", "LANG=C.UTF-8", "PS1=OPS$ ", "sh")
	td.tmux("set-option", "-t", "ops", "status", "off")
	f := attachClient(t, td, "ops", cols, rows)
	pane := "ops:0.0"
	td.waitPane(pane, "the shell prompt", func(s string) bool { return strings.Contains(s, "OPS$") })
	return pane, f
}

// waitClient polls until the operator's (only non-control) client shows want ("session
// pane") and fails the test if it never does.
func (td *testDaemon) waitClient(want string) {
	td.t.Helper()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got = td.clients(false); len(got) == 1 && strings.HasSuffix(got[0], " "+want) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	td.t.Fatalf("the operator's client never showed %s: %v; control clients %v; screen:\n%s", want, got, td.clients(true),
		td.tmux("capture-pane", "-p", "-t", strings.Fields(got[0] + " x x")[2]))
}

// keepScreen writes a capture to $NUDGE_WATCH_CAPTURE_DIR/NAME.txt when set (the README's
// screenshots are these).
func keepScreen(name, screen string) {
	if dir := os.Getenv("NUDGE_WATCH_CAPTURE_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, name+".txt"), []byte(screen), 0o644)
	}
}

// keys sends tmux key names to the pane.
func (td *testDaemon) keys(pane string, keys ...string) {
	td.t.Helper()
	td.tmux(append([]string{"send-keys", "-t", pane}, keys...)...)
}

// filterTo types the / filter and ends it with Enter.
func (td *testDaemon) filterTo(pane, words string) {
	td.t.Helper()
	td.keys(pane, "/")
	td.keys(pane, "-l", words)
	td.keys(pane, "Enter")
}

// lineIndex is the index of the first line of screen containing s, -1 if none.
func lineIndex(screen, s string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// clients is "name session pane" of each control client (control) or other client of the server that is not a control client.
func (td *testDaemon) clients(control bool) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(td.tmux("list-clients", "-F", "#{client_control_mode} #{client_name} #{session_name} #{pane_id}")), "\n") {
		if f := strings.Fields(l); len(f) == 4 && (f[0] == "1") == control {
			out = append(out, f[1]+" "+f[2]+" "+f[3])
		}
	}
	return out
}

func TestWatchPagesInRealTmuxPane(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	alpha, file := rawCat(t, td, "w", "alpha")
	wide := td.spawnShell("w", "wide", "sh", "-c", "printf '%s\\n' '日本語のテスト 🚀 done'; exec cat")
	delta := td.spawnShell("v", "delta", "cat")
	for i := 1; i <= 3; i++ {
		id := fmt.Sprint("wp-", i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w", "agent": "alpha", "prompt": "prompt " + id}); err != nil {
			t.Fatal(err)
		}
		td.waitTrigger(id, closed)
		readUntil(t, file, func(s string) bool { return strings.Contains(s, "prompt "+id) })
	}
	pane, f := watchOps(t, td, bin, "", 80, 24)

	// The list: grouped by workspace (v before w), every line within 80 cells.
	screen := td.waitPane(pane, "both workspaces", func(s string) bool {
		return rowOf(s, delta.RuntimeID) != "" && rowOf(s, wide.RuntimeID) != "" && strings.Contains(rowOf(s, alpha.RuntimeID), "wp-3")
	})
	keepScreen("list", screen)
	hv, hw := lineIndex(screen, "▾ v"), lineIndex(screen, "▾ w")
	if hv < 0 || hw < 0 || hv > lineIndex(screen, delta.RuntimeID) || hw > lineIndex(screen, alpha.RuntimeID) || hv > hw {
		t.Errorf("not grouped by workspace (v at %d, w at %d):\n%s", hv, hw, screen)
	}
	for i, l := range strings.Split(screen, "\n") {
		if w := tui.Width(l); w > 80 {
			t.Errorf("line %d is %d cells wide: %q", i, w, l)
		}
	}

	// / filters, Esc clears; o sorts.
	td.filterTo(pane, "wide")
	td.waitPane(pane, "only wide", func(s string) bool {
		return rowOf(s, wide.RuntimeID) != "" && rowOf(s, alpha.RuntimeID) == "" && rowOf(s, delta.RuntimeID) == "" && strings.Contains(s, "/wide")
	})
	// The runtime page of wide: its screen, wide characters intact.
	td.keys(pane, "Enter")
	td.waitPane(pane, "wide's screen with its wide characters", func(s string) bool {
		return strings.Contains(s, "Screen (live") && strings.Contains(s, "日本語のテスト 🚀 done")
	})
	td.keys(pane, "q", "Escape")
	td.waitPane(pane, "the whole list", func(s string) bool { return rowOf(s, alpha.RuntimeID) != "" && rowOf(s, delta.RuntimeID) != "" })
	td.keys(pane, "o")
	td.waitPane(pane, "sorted by state", func(s string) bool { return strings.Contains(s, "sort:state") })
	td.keys(pane, "?")
	td.waitPane(pane, "the help page", func(s string) bool { return strings.Contains(s, "Keys (any key closes this page)") })
	td.keys(pane, "x")
	td.waitPane(pane, "the list after help", func(s string) bool { return rowOf(s, alpha.RuntimeID) != "" && !strings.Contains(s, "Keys (any") })

	// alpha's page: its triggers newest first, each with its timeline; readiness; screen.
	td.filterTo(pane, "alpha")
	td.keys(pane, "Enter")
	screen = td.waitPane(pane, "alpha's page", func(s string) bool {
		return strings.Contains(s, "wp-1") && strings.Contains(s, "Readiness") && strings.Contains(s, "Screen (live")
	})
	keepScreen("runtime", screen)
	i3, i2, i1 := lineIndex(screen, "wp-3"), lineIndex(screen, "wp-2"), lineIndex(screen, "wp-1")
	if i3 < 0 || i3 >= i2 || i2 >= i1 {
		t.Errorf("triggers not newest first (wp-3 %d, wp-2 %d, wp-1 %d):\n%s", i3, i2, i1, screen)
	}
	if l := strings.Split(screen, "\n")[i3]; !strings.HasPrefix(l, "> ") || !strings.Contains(l, "queued") || !strings.Contains(l, "acked") {
		t.Errorf("wp-3's timeline: %q", l)
	}

	// Enter on a trigger: its page, with its stamps and audit story.
	td.keys(pane, "Down", "Enter")
	screen = td.waitPane(pane, "wp-2's page", func(s string) bool {
		return strings.Contains(s, "trigger wp-2") && strings.Contains(s, "Timeline") && strings.Contains(s, "Audit (") && !strings.Contains(s, "Audit (0")
	})
	keepScreen("trigger", screen)
	if !strings.Contains(screen, "prompt: prompt wp-2") || lineIndex(screen, "  acked ") < 0 {
		t.Errorf("wp-2's page lacks its prompt or acked stamp:\n%s", screen)
	}
	td.keys(pane, "q")
	td.waitPane(pane, "alpha's page again", func(s string) bool { return strings.Contains(s, "Triggers (newest first)") })
	td.keys(pane, "q", "Escape")
	td.waitPane(pane, "the list", func(s string) bool { return rowOf(s, delta.RuntimeID) != "" && rowOf(s, alpha.RuntimeID) != "" })

	// Resized: the dashboard follows the terminal, larger and back.
	for _, size := range []struct{ cols, rows uint16 }{{120, 40}, {80, 24}} {
		if err := pty.Setsize(f, &pty.Winsize{Cols: size.cols, Rows: size.rows}); err != nil {
			t.Fatal(err)
		}
		td.waitPane(pane, fmt.Sprintf("the dashboard at %dx%d", size.cols, size.rows), func(s string) bool {
			lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
			return len(lines) == int(size.rows) && tui.Width(strings.TrimRight(lines[0], " ")) == int(size.cols) &&
				strings.Contains(lines[len(lines)-1], "q quit")
		})
	}

	// a on a runtime of another workspace moves the person's client, not nudge's.
	control := td.clients(true)
	ops := td.clients(false)
	if len(ops) != 1 {
		t.Fatalf("clients: %v", ops)
	}
	td.filterTo(pane, "delta")
	td.keys(pane, "a")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.HasSuffix(td.clients(false)[0], "agents_v "+delta.PaneID) {
		time.Sleep(25 * time.Millisecond)
	}
	if got := td.clients(false); !strings.HasSuffix(got[0], "agents_v "+delta.PaneID) {
		t.Fatalf("the operator's client was not moved to %s: %v", delta.PaneID, got)
	}
	if got := td.clients(true); fmt.Sprint(got) != fmt.Sprint(control) {
		t.Errorf("nudge's control clients moved: before %v, after %v", control, got)
	}
	td.tmux("switch-client", "-c", strings.Fields(ops[0])[0], "-t", "ops")

	td.keys(pane, "q")
	td.waitPane(pane, "the shell again", func(s string) bool { return strings.Contains(s, "WATCH-EXIT-0") })
}

// Outside tmux, and inside a tmux of another server (where switch-client cannot reach and
// tmux would pick one of nudge's control clients), a hands the terminal to tmux attach and
// the dashboard comes back when the person detaches.
func TestWatchAttachOutsideTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	t.Run("no tmux", func(t *testing.T) {
		td := startDaemon(t, newTestConfig(t))
		alpha := td.spawnShell("w", "alpha", "sh", "-c", "echo ALPHA-SCREEN; exec cat")
		pane, _ := watchOps(t, td, bin, "env -u TMUX -u TMUX_PANE", 80, 24)
		attachAndBack(t, td, alpha, func(args ...string) string {
			return td.tmux(append(args[:1:1], append([]string{"-t", pane}, args[1:]...)...)...)
		})
	})
	t.Run("another tmux server", func(t *testing.T) {
		td := startDaemon(t, newTestConfig(t))
		alpha := td.spawnShell("w", "alpha", "sh", "-c", "echo ALPHA-SCREEN; exec cat")
		user := td.cfg.Panes.SocketName + "-user"
		t.Cleanup(func() { exec.Command("tmux", "-L", user, "kill-server").Run() })
		on := func(args ...string) string {
			out, err := exec.Command("tmux", append([]string{"-L", user}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("tmux -L %s %v: %v: %s", user, args, err, out)
			}
			return string(out)
		}
		on("new-session", "-d", "-s", "me", "-x", "80", "-y", "24", "env", "LANG=C.UTF-8", "PS1=ME$ ", "sh")
		on("set-option", "-t", "me", "status", "off")
		cmd := exec.Command("tmux", "-L", user, "attach-session", "-t", "me")
		cmd.Env = append(os.Environ(), "TERM=xterm-256color", "TMUX=")
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			t.Fatal(err)
		}
		copied := make(chan struct{})
		go func() { io.Copy(io.Discard, f); close(copied) }()
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close(); <-copied })
		inPane := func(args ...string) string {
			return on(append(args[:1:1], append([]string{"-t", "me:0.0"}, args[1:]...)...)...)
		}
		waitFor(t, func() string { return inPane("capture-pane", "-p") }, "the shell", func(s string) bool { return strings.Contains(s, "ME$") })
		inPane("send-keys", "-l", bin+" watch --socket "+td.cfg.Socket+" --tmux-socket "+td.cfg.Panes.SocketName+"; echo WATCH-EXIT-$?")
		inPane("send-keys", "Enter")
		control := td.clients(true)
		attachAndBack(t, td, alpha, inPane)
		if got := td.clients(true); fmt.Sprint(got) != fmt.Sprint(control) {
			t.Errorf("nudge's control clients moved: before %v, after %v", control, got)
		}
	})
}

// waitFor polls read until ok or a generous deadline, and returns what it read.
func waitFor(t *testing.T, read func() string, what string, ok func(string) bool) string {
	t.Helper()
	var s string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s = read(); ok(s) {
			return s
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("never saw %s:\n%s", what, s)
	return s
}

// attachAndBack presses a in the dashboard running in the pane inPane runs tmux commands
// on (its -t given), sees alpha's pane attached there, detaches that client and sees the
// dashboard again, then quits it.
func attachAndBack(t *testing.T, td *testDaemon, alpha runtimeView, inPane func(args ...string) string) {
	t.Helper()
	screen := func() string { return inPane("capture-pane", "-p") }
	waitFor(t, screen, "alpha's row", func(s string) bool { return rowOf(s, alpha.RuntimeID) != "" && strings.Contains(s, "[live]") })
	inPane("send-keys", "a")
	nested := ""
	waitFor(t, func() string { return fmt.Sprint(td.clients(false)) }, "a client attached to agents_w", func(string) bool {
		for _, c := range td.clients(false) {
			if f := strings.Fields(c); f[1] == "agents_w" {
				nested = f[0]
			}
		}
		return nested != ""
	})
	waitFor(t, screen, "alpha's pane inside the operator's", func(s string) bool { return strings.Contains(s, "ALPHA-SCREEN") })
	td.tmux("detach-client", "-t", nested)
	waitFor(t, screen, "the dashboard again", func(s string) bool {
		return strings.Contains(s, "back from "+alpha.RuntimeID) && rowOf(s, alpha.RuntimeID) != ""
	})
	inPane("send-keys", "q")
	waitFor(t, screen, "the shell again", func(s string) bool { return strings.Contains(s, "WATCH-EXIT-0") })
}

// nudge switch and nudge attach, run in a pane of nudge's tmux server, move the person's
// own client (never one of nudge's control clients) to the runtime's pane or session. The
// person's shell is a window of a workspace's session, where nudge's control client of
// that session is tmux's own pick for a switch-client without -c.
func TestSwitchAndAttachMoveTheOperatorsClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	alpha := td.spawnShell("w", "alpha", "cat")
	delta := td.spawnShell("v", "delta", "cat")
	// (Without alpha's runtime token, which the session hands its windows: it may only see alpha.)
	td.tmux("new-window", "-d", "-t", "agents_w:", "-n", "ops", "env", "-u", "NUDGE_RUNTIME_TOKEN", "LANG=C.UTF-8", "PS1=OPS$ ", "sh")
	pane := strings.TrimSpace(td.tmux("display-message", "-p", "-t", "agents_w:ops", "#{pane_id}"))
	attachClient(t, td, "agents_w:ops", 80, 24)
	td.waitPane(pane, "the shell prompt", func(s string) bool { return strings.Contains(s, "OPS$") })
	td.waitClient("agents_w " + pane)
	control := td.clients(true)
	ops := strings.Fields(td.clients(false)[0])[0]
	flags := " --socket " + td.cfg.Socket + " --tmux-socket " + td.cfg.Panes.SocketName

	td.keys(pane, "-l", bin+" switch "+delta.RuntimeID+flags)
	td.keys(pane, "Enter")
	td.waitClient("agents_v " + delta.PaneID)
	if got := td.clients(true); fmt.Sprint(got) != fmt.Sprint(control) {
		t.Errorf("nudge's control clients moved: before %v, after %v", control, got)
	}
	td.tmux("switch-client", "-c", ops, "-t", pane)
	td.waitClient("agents_w " + pane)
	td.keys(pane, "-l", bin+" attach v --tmux-socket "+td.cfg.Panes.SocketName)
	td.keys(pane, "Enter")
	td.waitClient("agents_v " + delta.PaneID)
	if got := td.clients(true); fmt.Sprint(got) != fmt.Sprint(control) {
		t.Errorf("nudge's control clients moved: before %v, after %v", control, got)
	}
	_ = alpha
}

// A trigger deferred by a person's draft: its runtime's page shows why and until when,
// and f force-delivers it with a reason, audited.
func TestWatchForceDeferred(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	cfg := collisionConfig(t)
	cfg.Inject.MaxDefer = time.Minute
	td := startDaemon(t, cfg)
	rt := td.spawnBash("rev")
	op := td.attachOperator(rt.PaneID)
	op.typeKeys("half-typed")
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.OperatorBusy })
	if _, err := td.trigger(map[string]any{"trigger_id": "fd-1", "workspace": "w1", "agent": "rev", "prompt": "wait for the person"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("fd-1", func(tr nudge.Trigger) bool { return tr.State == "deferred" })
	pane, _ := watchOps(t, td, bin, "", 80, 24)
	td.waitPane(pane, "rev's deferred trigger", func(s string) bool { return strings.Contains(rowOf(s, rt.RuntimeID), "fd-1 deferred") })
	td.keys(pane, "Enter")
	screen := td.waitPane(pane, "why and until when", func(s string) bool {
		l := rowOf(s, "fd-1")
		return strings.Contains(l, "→ deferred") && strings.Contains(l, "OPERATOR_BUSY until ")
	})
	keepScreen("deferred", screen)
	td.keys(pane, "f")
	td.waitPane(pane, "the reason prompt", func(s string) bool { return strings.Contains(s, "force fd-1 - reason:") })
	td.keys(pane, "-l", "the person left")
	td.keys(pane, "Enter")
	td.waitPane(pane, "the force's answer", func(s string) bool { return strings.Contains(s, "forced fd-1") })
	if out, _, _ := td.runCLI("audit", "--trigger", "fd-1"); !strings.Contains(out, "the person left") {
		t.Errorf("the force is not audited with its reason: %s", out)
	}
}

// The daemon going away leaves the dashboard up, its data marked stale with the time;
// it reconnects by itself when the daemon is back.
func TestWatchMarksStaleAndReconnects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt := td.spawnShell("w", "alpha", "cat")
	pane, _ := watchOps(t, td, bin, "", 80, 24)
	td.waitPane(pane, "alpha's row", func(s string) bool { return rowOf(s, rt.RuntimeID) != "" })
	td.stop()
	td.waitPane(pane, "the data marked stale", func(s string) bool {
		return strings.Contains(s, "[stale since ") && rowOf(s, rt.RuntimeID) != "" && strings.Contains(s, "daemon unreachable")
	})
	td2 := startDaemon(t, cfg)
	td2.waitPane(pane, "live again", func(s string) bool { return strings.Contains(s, "[live]") && rowOf(s, rt.RuntimeID) != "" })
	td2.keys(pane, "q")
	td2.waitPane(pane, "the shell again", func(s string) bool { return strings.Contains(s, "WATCH-EXIT-0") })
}
