package panes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		out, min string
		ok       bool
	}{
		{"2.1.332 (Claude Code)", "2.1.224", true},
		{"2.1.197 (Claude Code)", "2.1.224", false},
		{"claude 3.0.0", "2.1.224", true},
		{"2.1.224", "2.1.224", true},
		{"2.10.1", "2.9.99", true},
		{"no version here", "2.1.224", false},
	} {
		have, ok := parseVersion(c.out)
		want, _ := parseVersion(c.min)
		if got := ok && have.atLeast(want); got != c.ok {
			t.Errorf("%q ≥ %s: got %v, want %v", c.out, c.min, got, c.ok)
		}
	}
}

// channelArgs gives the flag only to a program that reports the version that has it, on
// this machine, with a socket path short enough to bind.
func TestChannelArgs(t *testing.T) {
	bin := t.TempDir()
	for name, ver := range map[string]string{"newcli": "2.1.332 (Claude Code)", "oldcli": "2.1.197 (Claude Code)"} {
		os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho '"+ver+"'\n"), 0o755)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	prof := Profile{Channel: ChannelClaude, ChannelFlag: "--messaging-socket-path", ChannelSince: "2.1.224"}
	l := &launcher{cfg: &Config{ChannelDir: "/tmp/nudge-0/abcd"}}
	got := l.channelArgs(prof, "rt_ws.dev", "newcli", nil)
	if len(got) != 2 || got[0] != "--messaging-socket-path" || got[1] != ChannelSocket("/tmp/nudge-0/abcd", "rt_ws.dev") {
		t.Fatalf("new CLI: %q", got)
	}
	if got := l.channelArgs(prof, "rt_ws.dev", "oldcli", nil); got != nil {
		t.Errorf("old CLI: %q", got)
	}
	if got := l.channelArgs(prof, "rt_ws.dev", "missingcli", nil); got != nil {
		t.Errorf("missing CLI: %q", got)
	}
	l.cfg.SSHHost = "far"
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli", nil); got != nil {
		t.Errorf("remote workspace: %q", got)
	}
	l.cfg.SSHHost, l.cfg.ChannelDir = "", "/"+strings.Repeat("d", 90)
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli", nil); got != nil {
		t.Errorf("path too long: %q", got)
	}
}

// The channel's version check runs the agent's program: a program an agent planted in its
// workspace, found first on the daemon's PATH, is refused as the launcher and never run,
// not even with --version.
func TestChannelVersionNotAskedOfAPlantedProgram(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.ChannelDir = t.TempDir()
		c.Profiles = map[string]Profile{"plant": {Name: "plant", Launch: []string{"plantcli"}, AllowedLaunchers: []string{"plantcli"},
			Pack: "shell", Channel: ChannelClaude, ChannelFlag: "--messaging-socket-path", ChannelSince: "2.1.224"}}
	})
	dir := filepath.Join(e.root, "proj")
	marker := filepath.Join(e.root, "planted-ran")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plantcli"), []byte("#!/bin/sh\ntouch "+marker+"\necho '9.9.9'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "a", Agent: "plant", Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "inside the workspace directory") {
		t.Errorf("spawn: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted program ran")
	}
}

// With a permission hook in the profile and the daemon's own binary known, the spawn also
// loads a settings file of nudge's (0600, beside the socket) whose PermissionRequest hook
// runs that binary, quoted for the shell: no secret in it.
func TestChannelArgsPermissionHook(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(bin, "newcli"), []byte("#!/bin/sh\necho '2.1.332 (Claude Code)'\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	prof := Profile{Channel: ChannelClaude, ChannelFlag: "--messaging-socket-path", ChannelSince: "2.1.224", PermissionHookFlag: "--settings"}
	self := filepath.Join(t.TempDir(), "it's nudge")
	l := &launcher{cfg: &Config{ChannelDir: dir, Self: self, Logger: hclog.NewNullLogger()}}
	got := l.channelArgs(prof, "rt_ws.dev", "newcli", nil)
	if len(got) != 4 || got[2] != "--settings" || !strings.HasPrefix(got[3], dir+"/") {
		t.Fatalf("args: %q", got)
	}
	fi, err := os.Stat(got[3])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settings file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(got[3])
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
				Timeout       int
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	h := settings.Hooks["PermissionRequest"]
	if len(h) != 1 || len(h[0].Hooks) != 1 || h[0].Hooks[0].Command != `'`+strings.ReplaceAll(self, `'`, `'\''`)+`' hook claude-permission` ||
		h[0].Hooks[0].Timeout != int(HookTimeout.Seconds()) {
		t.Fatalf("settings: %s", b)
	}
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli", []string{"claude", "--settings", "mine.json"}); len(got) != 2 {
		t.Errorf("a launch with a settings file of the user's: %q (the agent takes only one)", got)
	}
	l.cfg.Self = "nudge" // not an absolute path: no hook
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli", nil); len(got) != 2 {
		t.Errorf("a relative Self: %q", got)
	}
}

// TestChannelOpenedAgainOnRestart: a runtime nudge spawned with its agent's channel gets
// it again when it is restarted (a fresh start of the profile's launch) and when it is
// resumed after a crash (the profile's interactive resume): the socket the prompts go to
// (and the permission hook) come back with the program.
func TestChannelOpenedAgainOnRestart(t *testing.T) {
	bin := t.TempDir()
	argvFile := filepath.Join(bin, "argv")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)'; exit 0; fi\necho \"$*\" >> " + argvFile + "\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(bin, "chancli"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	e := newEnv(t, func(c *Config) {
		c.ChannelDir = t.TempDir()
		c.Profiles = map[string]Profile{"chan": {Name: "chan", Launch: []string{"chancli"}, AllowedLaunchers: []string{"chancli"},
			Pack: "shell", Channel: ChannelClaude, ChannelFlag: "--messaging-socket-path", ChannelSince: "2.1.224",
			SessionIDFlag: "--session-id", SessionIDValid: "^[a-f0-9-]+$", ResumeInteractive: []string{"chancli", "--resume", "{session_id}"}}}
	})
	lines := func(n int) []string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			b, _ := os.ReadFile(argvFile)
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); len(got) >= n && got[0] != "" {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the program was not launched %d times: %q", n, b)
			}
		}
	}
	rt, err := e.reg.Spawn(context.Background(), SpawnRequest{Workspace: "ws", Role: "a", Agent: "chan", Dir: e.root})
	if err != nil {
		t.Fatal(err)
	}
	sock := ChannelSocket(e.cfg.ChannelDir, rt.RuntimeID)
	if got := lines(1); !strings.Contains(got[0], "--messaging-socket-path "+sock) {
		t.Fatalf("spawn: %q", got[0])
	}
	if _, err := e.reg.Restart(context.Background(), rt.RuntimeID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := lines(2); !strings.Contains(got[1], "--messaging-socket-path "+sock) {
		t.Fatalf("restart: %q", got[1])
	}
	now, _ := e.reg.Get(rt.RuntimeID)
	if now.PID <= 0 {
		t.Fatalf("no pid: %+v", now)
	}
	syscall.Kill(now.PID, syscall.SIGKILL) // a crash: resumed in the pane
	if got := lines(3); !strings.Contains(got[2], "--resume "+rt.SessionID) || !strings.Contains(got[2], "--messaging-socket-path "+sock) {
		t.Fatalf("resume after a crash: %q", got[2])
	}
}

// OpenCode's port is never an ephemeral one (an outgoing connection may take one between
// nudge's check and the agent's bind, and OpenCode then hangs at start): it is below the
// kernel's ephemeral range, and free.
func TestFreeFixedPortIsNotEphemeral(t *testing.T) {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &first)
	}
	for range 50 {
		p := freeFixedPort()
		if p < 10000 || p >= first {
			t.Fatalf("port %d: want one in [10000, %d)", p, first)
		}
	}
}
