package controlmode

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestIfPaneRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		target string
		pid    int
		cmd    string
	}{
		{"%5", 0, "paste-buffer -b 'nudge-x' -d -p -r -t '%5'"},
		{"%5", 4242, "send-keys -t '%5' -H 0d"},
		{"=s:it's", 7, "send-keys -t 'a'\\''b' -l -- 'x'"},
		{"%1", 0, "display -p '#{pane_id}'"},
	} {
		line, err := IfPane(tc.target, tc.pid, tc.cmd)
		if err != nil {
			t.Fatalf("IfPane(%q, %d, %q): %v", tc.target, tc.pid, tc.cmd, err)
		}
		if got, ok := parseIfPane(line); !ok || got != tc.target {
			t.Errorf("parseIfPane(%q) = %q, %v; want %q", line, got, ok, tc.target)
		}
		if err := checkCommand(line); err == nil {
			t.Errorf("checkCommand accepts the two-block line %q", line)
		}
	}
	for _, cmd := range []string{"a ; b", "if-shell true x", "", "x\ny"} {
		if _, err := IfPane("%1", 0, cmd); !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("IfPane(%q): got %v, want ErrUnsafeCommand", cmd, err)
		}
	}
	if _, err := IfPane("%1", -1, "display -p x"); err == nil {
		t.Error("negative pid accepted")
	}
	// Hand-made if-shell lines stay refused: only IfPane's exact form reads two blocks.
	good, _ := IfPane("%1", 12, "display -p x")
	for _, line := range []string{
		strings.Replace(good, "display -p x", "a ; b", 1),
		strings.Replace(good, "display -p x", "if-shell 1 x", 1),
		strings.Replace(good, ",12}}", ",12x}}", 1),
		strings.Replace(good, ",12}}", ",0}}", 1),
		strings.Replace(good, ",12}}", ",012}}", 1),
		strings.Replace(good, "nudge:pane-gone", "other", 1),
		good + " x",
		good[:len(good)-1],
		"if-shell -F -t '%1' '1' 'display -p x' 'display -p y'",
	} {
		if _, ok := parseIfPane(line); ok {
			t.Errorf("parseIfPane(%q) accepted", line)
		}
		if _, err := newCall(line); !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("newCall(%q): got %v, want ErrUnsafeCommand", line, err)
		}
	}
}

// TestIfPaneReadsBothBlocks: an IfPane line is answered by its branch's block, the else
// branch gives a *PaneGoneError, an if-shell error ends it at once, and later replies
// still match.
func TestIfPaneReadsBothBlocks(t *testing.T) {
	h := newHarness(t, Config{})
	line, _ := IfPane("%1", 9, "paste-buffer -b 'b' -t '%1'")
	calls := []*Call{h.c.Go(line), h.c.Go("display -p a"), h.c.Go(line), h.c.Go(line), h.c.Go(line), h.c.Go("display -p b")}
	h.feed(t,
		"%begin 1 1 1", "%end 1 1 1", "%begin 1 2 1", "%end 1 2 1", // ran: if-shell, paste
		"%begin 1 3 1", "a", "%end 1 3 1",
		"%begin 1 4 1", "%end 1 4 1", "%begin 1 5 1", goneLine+" %1 1 9", "%end 1 5 1", // dead
		"%begin 1 6 1", "%end 1 6 1", "%begin 1 7 1", goneLine+"   ", "%end 1 7 1", // missing
		"%begin 1 8 1", "parse error", "%error 1 8 1", // if-shell itself failed: one block
		"%begin 1 9 1", "b", "%end 1 9 1",
	)
	ce := &CommandError{Cmd: line, Lines: []string{"parse error"}}
	want := []string{`reply []`, `reply ["a"]`, "error: controlmode: pane %1 is dead",
		"error: controlmode: pane %1 does not exist", "error: " + ce.Error(), `reply ["b"]`}
	for i, call := range calls {
		if got := outcome(call); got != want[i] {
			t.Errorf("call %d: got %s, want %s", i, got, want[i])
		}
	}
	var gone *PaneGoneError
	if !errors.As(calls[2].Err, &gone) || !errors.Is(calls[2].Err, ErrPaneGone) || !gone.Dead || gone.PID != 9 {
		t.Errorf("dead branch: got %#v", calls[2].Err)
	}
}

// TestIfPaneFailsWhenConnectionEndsBetweenBlocks: the call waiting for its branch block
// gets the connection's error.
func TestIfPaneFailsWhenConnectionEndsBetweenBlocks(t *testing.T) {
	h := newHarness(t, Config{})
	line, _ := IfPane("%1", 0, "display -p x")
	call := h.c.Go(line)
	h.feed(t, "%begin 1 1 1", "%end 1 1 1")
	h.end(t)
	if got := outcome(call); !strings.HasPrefix(got, "error: read: tmux exited") {
		t.Errorf("got %s, want the connection's error", got)
	}
}

// TestIfPaneAgainstTmux runs the guard in a real tmux 3.3a: a paste into a pane whose
// program exited under remain-on-exit (paste-buffer alone segfaults the server there), a
// pane with another pid, a missing pane, and a live one.
func TestIfPaneAgainstTmux(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "cat")
	srv.run("set-option", "-g", "remain-on-exit", "on")
	srv.run("new-window", "-d", "-t", "=s:", "sleep 0.2")
	var col collector
	c := dial(t, col.attach(srv.config()))
	panes := do(t, c, "list-panes -s -F '#{pane_id} #{pane_pid} #{window_index}'")
	var live, dying string
	var livePID int
	for _, p := range panes {
		f := strings.Fields(p)
		if f[2] == "1" {
			dying = f[0]
		} else {
			live, livePID = f[0], atoi(t, f[1])
		}
	}
	if live == "" || dying == "" {
		t.Fatalf("panes: %q", panes)
	}
	waitFor(t, func() bool { return do(t, c, "display -p -t "+dying+" '#{pane_dead}'")[0] == "1" })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	paste := func(target string, pid int, text string) error {
		g, err := IfPane(target, pid, "paste-buffer -b 'g' -d -p -r -t "+target)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.DoAll(ctx, "set-buffer -b 'g' -- "+text, g)
		return err
	}
	var gone *PaneGoneError
	if err := paste(dying, 0, "'to the dead'"); !errors.As(err, &gone) || !gone.Dead || gone.Pane != dying {
		t.Fatalf("paste into the dead pane: got %v, want a dead PaneGoneError", err)
	}
	if err := paste(live, livePID+1, "'to another pid'"); !errors.As(err, &gone) || gone.Dead || gone.PID != livePID {
		t.Fatalf("paste with a wrong pid: got %v, want PaneGoneError with pid %d", err, livePID)
	}
	if err := paste("%99", 0, "'to nobody'"); !errors.As(err, &gone) || gone.Pane != "" {
		t.Fatalf("paste into a missing pane: got %v, want PaneGoneError without a pane", err)
	}
	if got := do(t, c, "display -p ok"); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("after the refused pastes: %q", got)
	}
	if err := paste(live, livePID, "'to the living'"); err != nil {
		t.Fatalf("paste into the live pane: %v", err)
	}
	waitFor(t, func() bool { return strings.Contains(col.paneOutput(0), "to the living") })
	if out := col.paneOutput(0); strings.Contains(out, "to another pid") || strings.Contains(out, "to nobody") {
		t.Fatalf("a refused paste arrived: %q", out)
	}
	if out := srv.run("has-session"); out != "" {
		t.Fatalf("has-session: %q", out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIfAgentRoundTrip: an IfAgent line is read as a guarded line too, and its else
// branch's reply says which program held the foreground.
func TestIfAgentRoundTrip(t *testing.T) {
	line, err := IfAgent("%5", 42, "send-keys -t '%5' -l -- 'touch PWNED'")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := parseIfPane(line); !ok || got != "%5" {
		t.Errorf("parseIfPane(%q) = %q, %v", line, got, ok)
	}
	if !strings.Contains(line, "pane_current_command") {
		t.Errorf("IfAgent line has no foreground check: %q", line)
	}
	if bad := strings.Replace(line, "|busybox)", ")", 1); bad == line {
		t.Fatal("pattern not found")
	} else if _, ok := parseIfPane(bad); ok {
		t.Errorf("parseIfPane accepted a changed pattern: %q", bad)
	}
	for _, tc := range []struct {
		reply string
		shell bool
	}{
		{goneLine + " %5 0 42 bash", true},
		{goneLine + " %5 0 42 claude", false},
		{goneLine + " %5 0 42", false},
	} {
		gone, ok := parseGone("%5", []string{tc.reply})
		if !ok || gone.Shell != tc.shell || gone.PID != 42 {
			t.Errorf("parseGone(%q) = %+v, %v; want shell %v", tc.reply, gone, ok, tc.shell)
		}
	}
	for name, want := range map[string]bool{"bash": true, "sh": true, "zsh": true, "fish": true, "claude": false, "node": false, "bashful": false, "": false} {
		if IsShell(name) != want {
			t.Errorf("IsShell(%q) = %v", name, !want)
		}
	}
}

// TestIfAgentAgainstTmux: a real tmux refuses to type into a pane whose foreground
// program is a shell (an agent that exited back to it, seed 004), and types into the
// same pane once a program runs in the foreground.
func TestIfAgentAgainstTmux(t *testing.T) {
	checkGoroutines(t)
	dir := t.TempDir()
	srv := newServer(t, "sh")
	var col collector
	c := dial(t, col.attach(srv.config()))
	f := strings.Fields(do(t, c, "display -p -t =s: '#{pane_id} #{pane_pid}'")[0])
	pane, pid := f[0], atoi(t, f[1])
	// The pane's program is started through tmux's default shell, which shows for a moment
	// before it execs sh: wait for sh.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if do(t, c, "display -p -t "+pane+" '#{pane_current_command}'")[0] == "sh" {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typeLine := func(text string) error {
		q, _ := Quote(text)
		line, err := IfAgent(pane, pid, "send-keys -t "+pane+" -l -- "+q)
		if err != nil {
			t.Fatal(err)
		}
		enter, _ := IfAgent(pane, pid, "send-keys -t "+pane+" -H 0d")
		_, err = c.DoAll(ctx, line, enter)
		return err
	}
	var gone *PaneGoneError
	pwned := dir + "/PWNED"
	if err := typeLine("touch " + pwned); !errors.As(err, &gone) || !gone.Shell || gone.PID != pid || gone.Command != "sh" {
		t.Fatalf("typing into the shell: got %v (%+v), want a PaneGoneError with Shell", err, gone)
	}
	// Through the unguarded path the same shell runs what it reads: a program is started
	// in its foreground that way, and IfAgent types into that program.
	srv.run("send-keys", "-t", pane, "-l", "exec cat")
	srv.run("send-keys", "-t", pane, "Enter")
	waitFor(t, func() bool { return do(t, c, "display -p -t "+pane+" '#{pane_current_command}'")[0] == "cat" })
	if err := typeLine("to the agent"); err != nil {
		t.Fatalf("typing into cat: %v", err)
	}
	waitFor(t, func() bool { return strings.Contains(col.paneOutput(0), "to the agent") })
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the refused line ran in the shell")
	}
}
