package controlmode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIfAliveRoundTrip(t *testing.T) {
	for _, tc := range []struct{ target, cmd string }{
		{"%5", "paste-buffer -b 'nudge-x' -d -p -r -t '%5'"},
		{"=s:it's", "send-keys -t 'a'\\''b' -l -- 'x'"},
		{"%1", "display -p '#{pane_id}'"},
	} {
		line, err := IfAlive(tc.target, tc.cmd)
		if err != nil {
			t.Fatalf("IfAlive(%q, %q): %v", tc.target, tc.cmd, err)
		}
		if got, ok := parseIfAlive(line); !ok || got != tc.cmd {
			t.Errorf("parseIfAlive(%q) = %q, %v; want %q", line, got, ok, tc.cmd)
		}
	}
	for _, cmd := range []string{"a ; b", "if-shell true x", "", "x\ny"} {
		if _, err := IfAlive("%1", cmd); !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("IfAlive(%q): got %v, want ErrUnsafeCommand", cmd, err)
		}
	}
	// Hand-made if-shell lines stay refused: only IfAlive's exact form reads two blocks.
	for _, line := range []string{
		"if-shell -F -t '%1' '#{pane_dead}' 'display-message -p nudge:pane-dead' 'a ; b'",
		"if-shell -F -t '%1' '#{pane_dead}' 'display-message -p nudge:pane-dead' 'x' 'y'",
		"if-shell -F -t '%1' '1' 'display-message -p nudge:pane-dead' 'x'",
		"if-shell -F -t '%1' '#{pane_dead}' 'display-message -p nudge:pane-dead' 'x",
	} {
		if _, ok := parseIfAlive(line); ok {
			t.Errorf("parseIfAlive(%q) accepted", line)
		}
		if _, err := newCall(line); !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("newCall(%q): got %v, want ErrUnsafeCommand", line, err)
		}
	}
}

// TestIfAliveReadsBothBlocks: an IfAlive line is answered by its branch's block, the dead
// branch gives ErrPaneDead, an if-shell error ends it at once, and later replies match.
func TestIfAliveReadsBothBlocks(t *testing.T) {
	h := newHarness(t, Config{})
	alive, _ := IfAlive("%1", "paste-buffer -b 'b' -t '%1'")
	calls := []*Call{h.c.Go(alive), h.c.Go("display -p a"), h.c.Go(alive), h.c.Go(alive), h.c.Go("display -p b")}
	h.feed(t,
		"%begin 1 1 1", "%end 1 1 1", "%begin 1 2 1", "%end 1 2 1", // alive: if-shell, paste
		"%begin 1 3 1", "a", "%end 1 3 1",
		"%begin 1 4 1", "%end 1 4 1", "%begin 1 5 1", deadLine, "%end 1 5 1", // dead
		"%begin 1 6 1", "parse error", "%error 1 6 1", // if-shell itself failed: one block
		"%begin 1 7 1", "b", "%end 1 7 1",
	)
	want := []string{`reply []`, `reply ["a"]`, "error: " + ErrPaneDead.Error(), "error: " + (&CommandError{Cmd: alive, Lines: []string{"parse error"}}).Error(), `reply ["b"]`}
	for i, call := range calls {
		if got := outcome(call); got != want[i] {
			t.Errorf("call %d: got %s, want %s", i, got, want[i])
		}
	}
	if !errors.Is(calls[2].Err, ErrPaneDead) {
		t.Errorf("dead branch: got %v, want ErrPaneDead", calls[2].Err)
	}
}

// TestIfAliveFailsWhenConnectionEndsBetweenBlocks: the call waiting for its branch block
// gets the connection's error.
func TestIfAliveFailsWhenConnectionEndsBetweenBlocks(t *testing.T) {
	h := newHarness(t, Config{})
	alive, _ := IfAlive("%1", "display -p x")
	call := h.c.Go(alive)
	h.feed(t, "%begin 1 1 1", "%end 1 1 1")
	h.end(t)
	if got := outcome(call); !strings.HasPrefix(got, "error: read: tmux exited") {
		t.Errorf("got %s, want the connection's error", got)
	}
}

// TestIfAliveKeepsTmuxUpOnDeadPane pastes into a pane whose program has exited under
// remain-on-exit. tmux 3.3a's paste-buffer alone crashes the server there; through
// IfAlive it is refused with ErrPaneDead, the server lives, and a live pane still gets
// the paste.
func TestIfAliveKeepsTmuxUpOnDeadPane(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "cat")
	srv.run("set-option", "-g", "remain-on-exit", "on")
	srv.run("new-window", "-d", "-t", "=s:", "sleep 0.2")
	var col collector
	c := dial(t, col.attach(srv.config()))
	panes := do(t, c, "list-panes -s -F '#{pane_id} #{pane_current_command}'")
	var live, dying string
	for _, p := range panes {
		id, cmd, _ := strings.Cut(p, " ")
		if cmd == "sleep" {
			dying = id
		} else {
			live = id
		}
	}
	if live == "" || dying == "" {
		t.Fatalf("panes: %q", panes)
	}
	waitFor(t, func() bool { return do(t, c, "display -p -t "+dying+" '#{pane_dead}'")[0] == "1" })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	paste := func(target, text string) error {
		g, err := IfAlive(target, "paste-buffer -b 'g' -d -p -r -t "+target)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.DoAll(ctx, "set-buffer -b 'g' -- "+text, g)
		return err
	}
	if err := paste(dying, "'to the dead'"); !errors.Is(err, ErrPaneDead) {
		t.Fatalf("paste into the dead pane: got %v, want ErrPaneDead", err)
	}
	if got := do(t, c, "display -p ok"); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("after the refused paste: %q", got)
	}
	if err := paste(live, "'to the living'"); err != nil {
		t.Fatalf("paste into the live pane: %v", err)
	}
	waitFor(t, func() bool { return strings.Contains(col.paneOutput(0), "to the living") })
	if out := srv.run("has-session"); out != "" {
		t.Fatalf("has-session: %q", out)
	}
}
