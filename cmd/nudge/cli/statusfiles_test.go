package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/statusfiles"
)

// Seed 002 "Status Store + Display": the daemon keeps a status file per runtime and one
// for the fleet under <state-dir>/workers, with the seed's fields, readable while it runs;
// `nudge status` (and its --short status-line form) reads them when the socket does not
// answer, also while a daemon that does not answer holds the store (before: it could not
// read the locked store and printed nothing).
func TestStatusFilesReadWithoutSocket(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rt := td.spawnShell("w", "rev", "cat")
	if _, err := td.trigger(map[string]any{"trigger_id": "sf-1", "workspace": "w", "agent": "rev", "prompt": "hello"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("sf-1", closed)

	var r statusfiles.Runtime
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		r, err = statusfiles.ReadRuntime(cfg.StateDir, rt.RuntimeID)
		if err == nil && r.Status == "ready" && r.SnapHash != "" && r.PolledTS > 0 && r.LastTrigger != nil && r.LastTrigger.TriggerID == "sf-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime status file never showed the runtime: %+v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.Target != rt.Target || r.TmuxSession != "agents_w" || r.Agent != "shell" || len(r.History) == 0 || r.Actions == nil {
		t.Errorf("runtime status file: %+v", r)
	}
	for _, p := range []string{filepath.Join(cfg.StateDir, "workers", rt.RuntimeID, "status.json"), filepath.Join(cfg.StateDir, "workers", "status.json")} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}

	// The daemon runs (and holds the store) but its socket does not answer.
	sd, sock := "--state-dir="+cfg.StateDir, "--socket="+filepath.Join(t.TempDir(), "none.sock")
	out, errOut, code := td.runCLI("status", "--short", sd, sock)
	if code != 1 || !strings.HasPrefix(out, "(stale ") || !strings.Contains(out, "[rev: ") {
		t.Errorf("status --short without the socket: exit %d %q %q", code, out, errOut)
	}
	out, errOut, code = td.runCLI("status", sd, sock)
	if code != 1 || !strings.Contains(out, "rev") || !strings.Contains(out, "sf-1") ||
		!strings.Contains(errOut, "STALE: the daemon is not running (its socket does not answer)") || !strings.Contains(errOut, "status files") {
		t.Errorf("status without the socket: exit %d\n%s\n%s", code, out, errOut)
	}

	// And once it is down.
	td.stop()
	out, errOut, code = td.runCLI("ls", sd, sock)
	if code != 1 || !strings.Contains(out, rt.RuntimeID) || !strings.Contains(errOut, "status files") {
		t.Errorf("ls with the daemon down: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Once the daemon stops, the status line it kept says so instead of showing the last
// states as live (before: the last line stayed as it was).
func TestStatusLineMarkedStaleWhenDaemonStops(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	td.spawnShell("w", "rev", "cat")
	td.waitStatusRight("w", func() string { return td.d.StatusLine("w") })
	td.stop()
	if got := td.statusRight("w"); !strings.HasPrefix(got, "(stale ") || !strings.Contains(got, "[rev: ") {
		t.Errorf("status line after the daemon stopped: %q", got)
	}
}
