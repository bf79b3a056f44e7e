package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/daemon"
)

// serveOnce runs `nudge serve` in-process with cfg's dirs and returns its exit code and
// stderr; it must fail at start (the tests here never let it serve).
func serveOnce(t *testing.T, cfg daemon.Config) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var code int
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("serve panicked: %v", r)
			}
		}()
		code = run(ctx, env, []string{"serve", "--state-dir", cfg.StateDir, "--socket", cfg.Socket,
			"--tmux-socket", cfg.Panes.SocketName, "--tmux-config", "/dev/null", "--root", cfg.Panes.Roots[0]})
	}()
	return code, errb.String()
}

// A second daemon on the same state dir says so and exits 1 (it used to die with a nil
// pointer panic while closing what it had not opened).
func TestSecondDaemonRefused(t *testing.T) {
	cfg := newTestConfig(t)
	startDaemon(t, cfg)
	cfg2 := cfg
	cfg2.Socket = filepath.Join(t.TempDir(), "n2.sock")
	code, stderr := serveOnce(t, cfg2)
	if code != 1 || !strings.Contains(stderr, "another nudge daemon is using "+cfg.StateDir) {
		t.Fatalf("second daemon: exit %d: %s", code, stderr)
	}
}

// A damaged or emptied nudge.db is refused at start with the file named and what to do,
// exit 1, no panic, and the file is left as it was.
func TestDamagedStoreRefused(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	rawCat(t, td, "w1", "rev")
	for i := range 8 {
		id := "d" + strings.Repeat("x", i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "thread_id": id, "workspace": "w1", "agent": "rev", "prompt": strings.Repeat("p", 500)}); err != nil {
			t.Fatal(err)
		}
	}
	td.stop()
	dbPath := filepath.Join(cfg.StateDir, "nudge.db")
	good, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     {},
		"truncated": good[:3*4096+100],
		"garbage":   append(append([]byte(nil), good[:4*4096]...), bytes.Repeat([]byte{0xa5}, len(good)-4*4096)...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(dbPath, b, 0o600); err != nil {
				t.Fatal(err)
			}
			code, stderr := serveOnce(t, cfg)
			if code != 1 || !strings.Contains(stderr, dbPath) || !strings.Contains(stderr, "damaged") ||
				!strings.Contains(stderr, "move the file aside") {
				t.Fatalf("exit %d, want 1 naming %s and what to do: %s", code, dbPath, stderr)
			}
			if got, _ := os.ReadFile(dbPath); !bytes.Equal(got, b) {
				t.Fatalf("the damaged store was changed (%d bytes, was %d)", len(got), len(b))
			}
		})
	}
}

// A store that starts empty beside an old token.key (the old one moved aside as the
// error above advises) cannot bring a revoked token back: the key is rotated.
func TestRevokedTokenStaysRevokedWithNewStore(t *testing.T) {
	cfg := newTestConfig(t)
	td := startDaemon(t, cfg)
	tok := td.issue(t, "--subject", "orch", "--workspace", "*", "--verbs", "admin", "--ttl", "1h")
	cl, err := auth.Peek(tok)
	if err != nil {
		t.Fatal(err)
	}
	id := cl.ID
	if _, errOut, code := td.runCLI("token", "revoke", id); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	wantAPIError(t, "revoked", td.as(tok).do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "revoked")
	td.stop()
	if err := os.Rename(filepath.Join(cfg.StateDir, "nudge.db"), filepath.Join(cfg.StateDir, "nudge.db.damaged")); err != nil {
		t.Fatal(err)
	}
	td = startDaemon(t, cfg)
	wantAPIError(t, "revoked, new store", td.as(tok).do(bg(), "GET", "/v1/runtimes", nil, nil), "UNAUTHORIZED", "token refused")
	var recs []map[string]any
	if err := td.c.do(bg(), "GET", "/v1/audit", nil, &recs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || r["event"] == "token_key_rotated"
	}
	if !found {
		t.Fatalf("no token_key_rotated audit record: %v", recs)
	}
	// A restart with the same store keeps the key: tokens issued now keep working.
	tok2 := td.issue(t, "--subject", "orch", "--workspace", "*", "--verbs", "read", "--ttl", "1h")
	td.stop()
	td = startDaemon(t, cfg)
	if err := td.as(tok2).do(bg(), "GET", "/v1/runtimes", nil, nil); err != nil {
		t.Fatalf("token issued after the rotation, after a restart: %v", err)
	}
}
