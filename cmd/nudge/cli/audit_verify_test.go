package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One byte changed in the bbolt file on disk makes `nudge audit --verify` exit non-zero.
func TestAuditVerifyCLIDetectsOneByteEdit(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	body := map[string]any{"workspace": "av", "agent": "rev", "reason": "needle-audit-reason"}
	if err := td.c.do(t0(), "POST", "/v1/threads/th1/unblock", body, nil); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := td.runCLI("audit", "--verify")
	if code != 0 || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("clean log: %d %q %q", code, out, stderr)
	}
	td.stop()

	path := filepath.Join(cfg.StateDir, "nudge.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("needle-audit-reason")
	if bytes.Count(data, old) == 0 {
		t.Fatal("record not found in the file")
	}
	// One byte of the record ('a' -> 'A'); bbolt is copy-on-write, so stale copies in free
	// pages get the same edit.
	data = bytes.ReplaceAll(data, old, []byte("needle-Audit-reason"))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	td2 := startDaemon(t, cfg)
	out, stderr, code = td2.runCLI("audit", "--verify")
	if code == 0 || !strings.Contains(stderr, "does NOT verify") {
		t.Fatalf("edited log: exit %d stdout %q stderr %q", code, out, stderr)
	}
}
