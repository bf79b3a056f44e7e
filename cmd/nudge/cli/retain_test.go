package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// A finished trigger past --retain leaves the store: its receipt says it aged out and
// when, a repeat of its trigger_id is refused (never delivered again), an open trigger
// stays, and `nudge audit --verify --archive` passes on the trimmed log and its archive.
func TestRetainReceiptAgedOut(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Keep.Retain, cfg.Keep.Every, cfg.Keep.Tombstones = 300*time.Millisecond, 50*time.Millisecond, time.Hour
	cfg.Keep.AuditArchive = filepath.Join(cfg.StateDir, "audit")
	td := startDaemon(t, cfg)
	req := map[string]any{"trigger_id": "old-1", "workspace": "rw", "agent": "nobody", "prompt": "hello"}
	if _, err := td.trigger(req); err != nil && !isAPIError(err) {
		t.Fatal(err)
	}
	td.waitTrigger("old-1", func(tr nudge.Trigger) bool { return tr.Closed })
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		var tr nudge.Trigger
		if err = td.c.do(bg(), "GET", "/v1/triggers/old-1", nil, &tr); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantAPIError(t, "receipt of an aged-out trigger", err, "NOT_FOUND", "aged out")
	_, stderr, code := td.runCLI("receipt", "old-1")
	if code == 0 || !strings.Contains(stderr, "aged out") || !strings.Contains(stderr, "finished 20") {
		t.Fatalf("nudge receipt: exit %d, stderr %q", code, stderr)
	}
	_, err = td.trigger(req)
	wantAPIError(t, "a repeat after the window", err, "IDEMPOTENCY_CONFLICT", "aged out of the store")

	// The pass that removed the trigger seals its audit records next.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var v api.AuditVerified
		if err := td.c.do(bg(), "GET", "/v1/audit?verify=1", nil, &v); err != nil || !v.OK {
			t.Fatalf("verify while sealing: %+v, %v", v, err)
		}
		if v.ArchivedThrough > 0 {
			break
		}
	}
	out, stderr, code := td.runCLI("audit", "--verify", "--archive")
	if code != 0 || !strings.Contains(out, "hash chain intact") || !strings.Contains(out, "sealed into the archive") {
		t.Fatalf("audit --verify --archive: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	names, _ := filepath.Glob(filepath.Join(cfg.Keep.AuditArchive, "audit-*.jsonl"))
	if len(names) == 0 {
		t.Fatal("no sealed segment")
	}
	fi, err := os.Stat(names[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("segment %v mode %v", err, fi.Mode())
	}
}

func isAPIError(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae)
}

// Another workspace's scoped token learns nothing of a trigger that aged out: its
// receipt is the plain NOT_FOUND of a trigger it cannot read (not when it finished and
// left), and reusing its id is the plain CONFLICT of an id taken elsewhere.
func TestRetainAgedOutHiddenFromOtherWorkspace(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Keep.Retain, cfg.Keep.Every, cfg.Keep.Tombstones = 300*time.Millisecond, 50*time.Millisecond, time.Hour
	td := startDaemon(t, cfg)
	if _, err := td.trigger(map[string]any{"trigger_id": "secret-1", "workspace": "rw", "agent": "nobody", "prompt": "hello"}); err != nil && !isAPIError(err) {
		t.Fatal(err)
	}
	td.waitTrigger("secret-1", func(tr nudge.Trigger) bool { return tr.Closed })
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = td.c.do(bg(), "GET", "/v1/triggers/secret-1", nil, nil); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantAPIError(t, "the owner's receipt", err, "NOT_FOUND", "aged out")

	other := td.as(td.issue(t, "--subject", "orch", "--workspace", "w2", "--verbs", "trigger,read", "--ttl", "1h"))
	err = other.do(bg(), "GET", "/v1/triggers/secret-1", nil, nil)
	wantAPIError(t, "another workspace's receipt", err, "NOT_FOUND", "secret-1")
	if strings.Contains(err.Error(), "aged out") || strings.Contains(err.Error(), "finished") {
		t.Fatalf("another workspace learns the trigger aged out: %v", err)
	}
	err = other.do(bg(), "POST", "/v1/triggers", map[string]any{"trigger_id": "secret-1", "workspace": "w2", "agent": "x", "prompt": "hi"}, nil)
	wantAPIError(t, "another workspace's repeat", err, "CONFLICT", "already used")
	if strings.Contains(err.Error(), "aged out") || strings.Contains(err.Error(), "finished") {
		t.Fatalf("another workspace learns the trigger aged out: %v", err)
	}
}

// Doctor says how big the daemon's store is, against the daemon's --store-warn-size, and
// how much room its file system has left.
func TestDoctorStoreSpace(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.StateDir = filepath.Join(cfg.StateDir, "state")
	cfg.Keep.WarnSize = 1 << 30
	startDaemon(t, cfg)
	newDoctorEnv(t)
	out, code := runDoctorCLI(t, cfg.Socket, "--state-dir", cfg.StateDir)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	wantLines(t, out, "ok    local: store "+filepath.Join(cfg.StateDir, "nudge.db")+": ")
	if !strings.Contains(out, " of serve --store-warn-size 1024.0 MB, ") || !strings.Contains(out, "left on its file system") {
		t.Fatalf("no free space in:\n%s", out)
	}
}
