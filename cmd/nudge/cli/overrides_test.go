package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer the daemon's goroutines may write while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveArgs are the flags of a `nudge serve` on private dirs and a private tmux server;
// nothing about profiles or packs.
func serveArgs(t *testing.T) (args []string, socket string) {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "nt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket = filepath.Join(sockDir, "n.sock")
	server := fmt.Sprintf("nudge-t-%d-%d", os.Getpid(), testSeq.Add(1))
	t.Cleanup(func() { exec.Command("tmux", "-L", server, "kill-server").Run() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return []string{"serve", "--state-dir", t.TempDir(), "--socket", socket, "--tmux-socket", server,
		"--tmux-config", "/dev/null", "--root", root, "--store-check-timeout", "0"}, socket
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// With no flag, serve reads the profile overrides in $XDG_CONFIG_HOME/nudge/profiles (a new
// profile can be spawned) and says so in its log; --pack-dir still names another directory.
func TestServeReadsXDGOverrides(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	profiles := filepath.Join(xdg, "nudge", "profiles")
	writeFile(t, filepath.Join(profiles, "mine.json"), `{"launch":["bash","--norc","--noprofile"],"allowed_launchers":["bash"],"pack":"shell"}`)
	writeFile(t, filepath.Join(xdg, "nudge", "packs", "shell.json"), `{`) // not read: --pack-dir wins
	packs := t.TempDir()
	writeFile(t, filepath.Join(packs, "extra.json"), `{"busy":["crunching"],"composer":{"prompt":"^>> "}}`)

	args, socket := serveArgs(t)
	args = append(args, "--pack-dir", packs)
	logs := &lockedBuffer{}
	env := &cliEnv{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, env, args) }()
	t.Cleanup(func() { cancel(); <-done })

	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), "serving") {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d:\n%s", code, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := logs.String()
	for _, want := range []string{
		"profile overrides: dir=" + profiles + " exists=true files=[\"mine.json\"]",
		"pack overrides: dir=" + packs + " exists=true files=[\"extra.json\"]",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	c := newClient(socket, "")
	var rt runtimeView
	root := args[slicesIndex(args, "--root")+1]
	if err := c.do(t0(), "POST", "/v1/runtimes", spawnBody{Workspace: "xdg", Role: "w", Agent: "mine", Dir: root}, &rt); err != nil {
		t.Fatalf("spawn with the XDG profile: %v", err)
	}
	if rt.Agent != "mine" || len(rt.Argv) == 0 || rt.Argv[0] != "bash" {
		t.Errorf("spawned %+v", rt)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// A malformed override file stops serve at once with an error that names the file.
func TestServeMalformedOverrideFails(t *testing.T) {
	for _, kind := range []string{"profiles", "packs"} {
		t.Run(kind, func(t *testing.T) {
			xdg := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", xdg)
			bad := filepath.Join(xdg, "nudge", kind, "codex.json")
			writeFile(t, bad, `{"launch": [`)
			args, _ := serveArgs(t)
			var out bytes.Buffer
			env := &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: os.Getenv}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if code := run(ctx, env, args); code != 1 || !strings.Contains(out.String(), bad) {
				t.Fatalf("exit %d, want 1 and an error naming %s:\n%s", code, bad, out.String())
			}
		})
	}
}
