package fuzz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/panes"
)

// launcherTree builds a daemon PATH directory holding the allowed "agent" (and a
// symlink to it), and a workspace holding planted executables with allowed names.
func launcherTree(t testing.TB) (path, ws, agent string) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	ws = filepath.Join(root, "ws")
	for _, d := range []string{bin, filepath.Join(ws, "tools"), filepath.Join(ws, "evil"), filepath.Join(root, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := func(p string) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agent = filepath.Join(bin, "agent")
	exe(agent)
	exe(filepath.Join(ws, "tools", "agent"))
	exe(filepath.Join(ws, "evil", "sh"))
	exe(filepath.Join(root, "other", "agent"))
	if err := os.Symlink(agent, filepath.Join(bin, "agent-link")); err != nil {
		t.Fatal(err)
	}
	// A symlink in the workspace to the real agent is still inside the workspace.
	if err := os.Symlink(agent, filepath.Join(ws, "tools", "link")); err != nil {
		t.Fatal(err)
	}
	return bin, ws, agent
}

// FuzzLauncherResolution: whatever argv[0] is, ResolveLauncher never panics, and what it
// allows is an absolute path outside the workspace that is the same file as an allowed
// launcher resolves to (the PATH's agent, or sh); a planted file never is.
func FuzzLauncherResolution(f *testing.F) {
	for _, s := range []string{"agent", "sh", "tools/agent", "./tools/agent", "evil/sh", "../bin/agent",
		"agent-link", "tools/link", "/bin/sh", "/usr/bin/sh", "", "a=b", "../other/agent", "//bin//sh", "tools/../../bin/agent",
		"evil/../../other/agent", "agent\x00", "ag ent", "."} {
		f.Add(s)
	}
	path, ws, agent := launcherTree(f)
	sysPath := os.Getenv("PATH")
	rule := panes.LauncherRule{Allowed: []string{"agent", "sh"}, Dirs: []string{ws}, Cwd: ws, Path: path + ":" + sysPath}
	shReal, _ := filepath.EvalSymlinks(lookup("sh", sysPath))
	agentReal, _ := filepath.EvalSymlinks(agent)
	f.Fuzz(func(t *testing.T, prog string) {
		got, err := panes.ResolveLauncher(prog, rule)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) {
			t.Fatalf("%q resolved to a relative path %q", prog, got)
		}
		real, err := filepath.EvalSymlinks(got)
		if err != nil {
			t.Fatalf("%q resolved to %q, which does not exist: %v", prog, got, err)
		}
		if real != agentReal && real != shReal {
			t.Fatalf("%q resolved to %q (%s): not an allowed launcher", prog, got, real)
		}
		if rel, err := filepath.Rel(ws, got); err == nil && !strings.HasPrefix(rel, "..") {
			t.Fatalf("%q resolved to %q inside the workspace", prog, got)
		}
	})
}

func lookup(name, path string) string {
	for _, d := range filepath.SplitList(path) {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A policy may name a launcher inside the workspace by absolute path; nothing else there.
func TestLauncherPolicyNamed(t *testing.T) {
	path, ws, _ := launcherTree(t)
	tool := filepath.Join(ws, "tools", "agent")
	rule := panes.LauncherRule{Allowed: []string{"agent"}, Dirs: []string{ws}, Cwd: ws, Path: path}
	if _, err := panes.ResolveLauncher("tools/agent", rule); err == nil {
		t.Fatal("a planted tools/agent was allowed")
	}
	rule.Named = []string{tool}
	if got, err := panes.ResolveLauncher("tools/agent", rule); err != nil || got != tool {
		t.Fatalf("policy-named %s: %q %v", tool, got, err)
	}
	if _, err := panes.ResolveLauncher("evil/sh", rule); err == nil {
		t.Fatal("evil/sh was allowed")
	}
}
