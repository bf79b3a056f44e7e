package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// buildWatchBinary builds this command into a temp dir.
func buildWatchBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nudge")
	out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// attachClient attaches a tmux client to session on the daemon's server through a PTY of
// the given size, like an operator's terminal, and returns the terminal (pty.Setsize on it
// resizes the client).
func attachClient(t *testing.T, td *testDaemon, session string, cols, rows uint16) *os.File {
	t.Helper()
	cmd := exec.Command("tmux", "-L", td.cfg.Panes.SocketName, "attach-session", "-t", session)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "TMUX=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() { io.Copy(io.Discard, f); close(copied) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		<-copied
	})
	return f
}

// waitPane polls capture-pane until ok or a generous deadline, and returns the screen.
func (td *testDaemon) waitPane(target string, what string, ok func(string) bool) string {
	td.t.Helper()
	var screen string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		screen = td.tmux("capture-pane", "-p", "-t", target)
		if ok(screen) {
			return screen
		}
		time.Sleep(25 * time.Millisecond)
	}
	td.t.Fatalf("pane %s never showed %s; screen:\n%s", target, what, screen)
	return screen
}

func rowOf(screen, id string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, id+" ") {
			return l
		}
	}
	return ""
}

func TestWatchInRealTmuxPane(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildWatchBinary(t)
	td := startDaemon(t, newTestConfig(t))
	alpha, file := rawCat(t, td, "w", "alpha")
	beta := td.spawnShell("w", "beta", "cat")
	gamma := td.spawnShell("w", "gamma", "cat")
	if _, err := td.trigger(map[string]any{"trigger_id": "wt-1", "workspace": "w", "agent": "alpha", "prompt": "hello from the watch test"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("wt-1", closed)
	readUntil(t, file, func(s string) bool { return strings.Contains(s, "hello from the watch test") })

	// The operator's session on nudge's tmux server: an 80x24 terminal running a shell.
	td.tmux("new-session", "-d", "-s", "ops", "-x", "80", "-y", "24", "env", "PS1=OPS$ ", "sh")
	td.tmux("set-option", "-t", "ops", "status", "off")
	attachClient(t, td, "ops", 80, 24)
	pane := "ops:0.0"
	td.waitPane(pane, "the shell prompt", func(s string) bool { return strings.Contains(s, "OPS$") })
	td.tmux("send-keys", "-t", pane, "-l", bin+" watch --socket "+td.cfg.Socket+" --tmux-socket "+td.cfg.Panes.SocketName+"; echo WATCH-EXIT-$?")
	td.tmux("send-keys", "-t", pane, "Enter")

	ids := []string{alpha.RuntimeID, beta.RuntimeID, gamma.RuntimeID}
	screen := td.waitPane(pane, "three runtime rows", func(s string) bool {
		for _, id := range ids {
			if rowOf(s, id) == "" {
				return false
			}
		}
		return strings.Contains(s, "nudge watch") && strings.Contains(rowOf(s, alpha.RuntimeID), "wt-1")
	})
	if on := strings.TrimSpace(td.tmux("display-message", "-p", "-t", pane, "#{alternate_on}")); on != "1" {
		t.Errorf("watch is not on the alternate screen: alternate_on=%s", on)
	}
	for _, id := range ids {
		row := rowOf(screen, id)
		want := stateWord(td.get(id).Runtime)
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks state %s", row, want)
		}
	}
	if row := rowOf(screen, alpha.RuntimeID); !strings.Contains(row, "acked/delivered") {
		t.Errorf("alpha's row lacks its last receipt: %q", row)
	}
	for i, l := range strings.Split(screen, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("line %d wider than 80: %q", i, l)
		}
	}

	// Live: a pause made elsewhere shows up from the event stream.
	if _, _, code := td.runCLI("pause", beta.RuntimeID); code != 0 {
		t.Fatal("pause failed")
	}
	screen = td.waitPane(pane, "beta paused", func(s string) bool { return strings.Contains(rowOf(s, beta.RuntimeID), "PAUSED") })
	if path := os.Getenv("NUDGE_WATCH_CAPTURE"); path != "" { // for the README
		os.WriteFile(path, []byte(screen), 0o644)
	}

	// p on beta (second row) resumes it.
	td.tmux("send-keys", "-t", pane, "Down")
	td.waitPane(pane, "beta selected", func(s string) bool { return strings.HasPrefix(rowOf(s, beta.RuntimeID), "> ") })
	td.tmux("send-keys", "-t", pane, "p")
	td.waitRuntime(beta.RuntimeID, func(r runtimeView) bool { return !r.Paused })

	// Enter opens the detail view of the selected runtime: its output and history.
	td.tmux("send-keys", "-t", pane, "Up", "Enter")
	td.waitPane(pane, "alpha's detail", func(s string) bool {
		return strings.Contains(s, "Screen (") && strings.Contains(s, "wt-1") && strings.Contains(s, "Triggers")
	})
	td.tmux("send-keys", "-t", pane, "q")
	td.waitPane(pane, "the list again", func(s string) bool { return strings.Contains(s, "LAST RECEIPT") })

	// s switches the operator's client to gamma's pane.
	td.tmux("send-keys", "-t", pane, "Down", "Down", "s")
	deadline := time.Now().Add(20 * time.Second)
	var clients string
	for time.Now().Before(deadline) {
		clients = td.tmux("list-clients", "-F", "#{session_name} #{pane_id}")
		if strings.Contains(clients, "agents_w "+gamma.PaneID) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(clients, "agents_w "+gamma.PaneID) {
		t.Fatalf("client not switched to %s: %q", gamma.PaneID, clients)
	}
	td.tmux("switch-client", "-t", "ops")

	// q quits and hands the terminal back: alternate screen left, shell prompt again.
	td.tmux("send-keys", "-t", pane, "q")
	td.waitPane(pane, "the shell again", func(s string) bool { return strings.Contains(s, "WATCH-EXIT-0") })
	if on := strings.TrimSpace(td.tmux("display-message", "-p", "-t", pane, "#{alternate_on}")); on != "0" {
		t.Errorf("terminal not restored: alternate_on=%s", on)
	}
	td.tmux("send-keys", "-t", pane, "-l", "echo STILL-HERE")
	td.tmux("send-keys", "-t", pane, "Enter")
	td.waitPane(pane, "a working shell", func(s string) bool { return strings.Count(s, "STILL-HERE") >= 2 })
}
