package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/controlmode"
)

// TestServeRefusesOldTmux: below tmux 3.2 `nudge serve` refuses at once, saying which
// version it found and what it needs.
func TestServeRefusesOldTmux(t *testing.T) {
	old := filepath.Join(t.TempDir(), "tmux31")
	writeFile(t, old, "#!/bin/sh\necho tmux 3.1c\n")
	if err := os.Chmod(old, 0o700); err != nil {
		t.Fatal(err)
	}
	args, _ := serveArgs(t)
	var out bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: os.Getenv}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := run(ctx, env, append(args, "--tmux", old)); code != 1 ||
		!strings.Contains(out.String(), "nudge needs tmux 3.2 or newer") || !strings.Contains(out.String(), "3.1c") {
		t.Fatalf("exit %d, want 1 and an error naming 3.1c and 3.2:\n%s", code, out.String())
	}
}

// TestHealthNamesTmux: GET /v1/health gives the tmux version and what is degraded on it,
// as doctor and the controlmode Caps see it.
func TestHealthNamesTmux(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	h, err := api.NewClient(td.cfg.Socket, "").Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command("tmux", "-V").Output()
	if err != nil {
		t.Fatal(err)
	}
	caps := controlmode.ParseVersion(string(v))
	if h.Tmux == nil || h.Tmux.Version != caps.Version || len(h.Tmux.Degraded) != len(caps.Degraded()) {
		t.Fatalf("health tmux %+v, want %s degraded %q", h.Tmux, caps, caps.Degraded())
	}
}
