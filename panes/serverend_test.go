package panes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestListPanesOfAServerThatWasEnding: a stop that closes the last pane of a workspace's
// server ends that server, and a restart right after lists the workspace's panes while the
// server is still on its way out: tmux answers "server exited unexpectedly", then (the
// server gone) "no server running". That is an empty list, not a failed restart (seen as
// `SPAWN_FAILED: tmux list-panes: … server exited unexpectedly` on a restart through the
// hub). A stand-in tmux answers as the ending server does.
func TestListPanesOfAServerThatWasEnding(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	fake := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\necho x >> " + count + "\n" +
		"if [ $(wc -l < " + count + ") -eq 1 ]; then echo 'server exited unexpectedly' >&2; else echo 'no server running on /tmp/x' >&2; fi\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Tmux: fake, SocketName: "nudge-t-ending", CommandTimeout: 5 * time.Second}
	cs := &conns{cfg: cfg, tmux: &tmuxClient{cfg: cfg}}
	w := &workspace{name: "ws", at: place{server: server{}, session: SessionName("ws")}}
	panes, err := cs.listPanes(context.Background(), w)
	if err != nil || len(panes) != 0 {
		t.Fatalf("list of an ending server: %v %v, want none and no error", panes, err)
	}
}

// TestStopThenRestartTheOnlyRuntime: the runtime whose pane is the last of its server is
// stopped (the server ends) and restarted at once, again and again: every restart starts it.
func TestStopThenRestartTheOnlyRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rt := e.spawn("solo", "a", "sh", "-c", "exec sleep 600")
	ctx := context.Background()
	for i := range 8 {
		if err := e.reg.Stop(ctx, rt.RuntimeID, "test"); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if _, err := e.reg.Restart(ctx, rt.RuntimeID, "test"); err != nil {
			t.Fatalf("restart %d right after the stop: %v", i, err)
		}
		if s := e.status(rt.RuntimeID); s == nudge.StatusFailed {
			t.Fatalf("restart %d: status %s", i, s)
		}
	}
}
