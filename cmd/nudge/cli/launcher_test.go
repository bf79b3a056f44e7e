package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An executable planted in a workspace under an allowed launcher's name (tools/codex,
// evil/bash) is refused, relative or absolute; nothing of it runs. The real program on
// the daemon's PATH, by name or by path, still starts.
func TestPlantedLauncherRefused(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	ws := filepath.Join(td.cfg.Panes.Roots[0], "proj")
	marker := filepath.Join(td.cfg.Panes.Roots[0], "planted-ran")
	for _, p := range []string{"tools/codex", "evil/bash", "evil/sh"} {
		file := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("#!/bin/sh\ntouch "+marker+"\nexec sleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct {
		agent string
		argv  []string
	}{
		{"codex", []string{"tools/codex"}},
		{"codex", []string{"./tools/codex"}},
		{"codex", []string{filepath.Join(ws, "tools", "codex")}},
		{"shell", []string{"evil/bash", "-c", "true"}},
		{"shell", []string{filepath.Join(ws, "evil", "sh"), "-c", "true"}},
	} {
		body := spawnBody{Workspace: "w1", Role: "r" + string(rune('a'+i)), Agent: c.agent, Dir: ws, Argv: c.argv}
		err := td.c.do(bg(), "POST", "/v1/runtimes", body, nil)
		if err == nil || !strings.Contains(err.Error(), "launcher refused") {
			t.Errorf("%s %q: spawned (%v)", c.agent, c.argv, err)
		}
	}
	// The real sh, by name and by a path on the daemon's PATH.
	td.spawnShell("w1", "ok1", "sh", "-c", "exec cat")
	sh := ""
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(d, "sh"); fileExists(p) {
			sh = p
			break
		}
	}
	td.spawnShell("w1", "ok2", sh, "-c", "exec cat")
	time.Sleep(200 * time.Millisecond)
	if fileExists(marker) {
		t.Fatal("a planted launcher ran")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
