package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// BenchmarkStatusFilesBusyPane measures the status files' write rate on real busy panes
// (a real daemon, its own tmux server): "stream" prints a line every millisecond without
// pause (BUSY throughout), "bursts" prints 20 lines then pauses past its ready_quiet
// (BUSY and READY in turn, a capture each time). Each op is one second of the panes
// running. writes/s is the status files written a second (every runtime's and the
// fleet's), changes/s the changes the status files took (runtime, readiness and trigger
// events, captures), each of which would have been two writes without coalescing.
func BenchmarkStatusFilesBusyPane(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux not installed")
	}
	cfg := daemon.DefaultConfig()
	cfg.StateDir = b.TempDir()
	os.Chmod(cfg.StateDir, 0o700) //nolint:errcheck // a temp dir of ours
	sockDir, err := os.MkdirTemp("", "nb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	cfg.Socket = filepath.Join(sockDir, "n.sock")
	cfg.Panes.SocketName = fmt.Sprintf("nudge-b-%d", os.Getpid())
	cfg.Panes.ConfigFile = "/dev/null"
	root, _ := filepath.EvalSymlinks(b.TempDir())
	cfg.Panes.Roots = []string{root}
	cfg.ProfileDir, cfg.PackDir = "", ""
	defer exec.Command("tmux", "-L", cfg.Panes.SocketName, "kill-server").Run() //nolint:errcheck // gone is fine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := &cliEnv{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: os.Getenv}
	d, err := daemon.Open(ctx, cfg, env.stderr)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	go d.Run(ctx) //nolint:errcheck // ends with ctx
	c := api.NewClient(cfg.Socket, "")
	for role, script := range map[string]string{
		"stream": `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.001; done`,
		"bursts": `while :; do for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo "burst $i"; done; sleep 0.4; done`,
	} {
		if _, err := c.Spawn(ctx, api.SpawnRequest{Workspace: "b", Role: role, Agent: "shell", Dir: root, Argv: []string{"sh", "-c", script}}); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // both running
	writes0, changes0 := d.Rooms().Status.Writes(), d.Rooms().Status.Changes()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		time.Sleep(time.Second)
	}
	took := time.Since(start).Seconds()
	b.ReportMetric(float64(d.Rooms().Status.Writes()-writes0)/took, "writes/s")
	b.ReportMetric(float64(d.Rooms().Status.Changes()-changes0)/took, "changes/s")
}
