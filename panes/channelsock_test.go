package panes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	got := l.channelArgs(prof, "rt_ws.dev", "newcli")
	if len(got) != 2 || got[0] != "--messaging-socket-path" || got[1] != ChannelSocket("/tmp/nudge-0/abcd", "rt_ws.dev") {
		t.Fatalf("new CLI: %q", got)
	}
	if got := l.channelArgs(prof, "rt_ws.dev", "oldcli"); got != nil {
		t.Errorf("old CLI: %q", got)
	}
	if got := l.channelArgs(prof, "rt_ws.dev", "missingcli"); got != nil {
		t.Errorf("missing CLI: %q", got)
	}
	l.cfg.SSHHost = "far"
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli"); got != nil {
		t.Errorf("remote workspace: %q", got)
	}
	l.cfg.SSHHost, l.cfg.ChannelDir = "", "/"+strings.Repeat("d", 90)
	if got := l.channelArgs(prof, "rt_ws.dev", "newcli"); got != nil {
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
