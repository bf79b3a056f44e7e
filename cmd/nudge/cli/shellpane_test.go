package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// Issue 32 item 9: seed 004's own flow. The user opens a shell in a session of their own
// (`tmux new -s consilio-ps`), starts the agent from it and registers the pane (managed by
// default). When the agent exits, that shell is back in the foreground: nothing nudge
// types may reach it (a prompt there runs as commands), and no fallback may end it.

// claudeComposer draws what Claude Code's pack reads as READY, then hands the foreground
// to cat (a program that is not a shell, and never acks): the stand-in agent the user
// starts from their shell. Typing a line ends it, back to the shell.
const claudeComposer = `printf '╭──────────────────────────╮\n│ > Try "fix lint errors" │\n╰──────────────────────────╯\n'; exec `

// userShellPane starts the user's shell in session consilio-ps of a private tmux server
// standing for the user's default one, in dir, and returns the server, the pane and the
// shell's pid.
func userShellPane(t *testing.T, dir string) (*userTmux, string, int) {
	t.Helper()
	u := newUserTmux(t)
	u.tmux("new-session", "-d", "-s", "consilio-ps", "-x", "120", "-y", "40", "-c", dir, "-e", "PS1=$ ",
		"bash", "--norc", "--noprofile")
	u.needDeadPaneSafe()
	f := strings.Fields(u.tmux("display-message", "-p", "-t", "consilio-ps:0.0", "#{pane_id} #{pane_pid}"))
	pid, _ := strconv.Atoi(f[1])
	return u, f[0], pid
}

// runInShell types a command line into the user's shell, as the user does.
func (u *userTmux) runInShell(pane, line string) {
	u.t.Helper()
	u.tmux("send-keys", "-t", pane, "-l", line)
	u.tmux("send-keys", "-t", pane, "Enter")
}

// waitForeground waits until the pane's foreground program is want.
func (u *userTmux) waitForeground(pane, want string) {
	u.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for u.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}") != want {
		if time.Now().After(deadline) {
			u.t.Fatalf("pane %s: foreground %q, want %q", pane, u.tmux("display-message", "-p", "-t", pane, "#{pane_current_command}"), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shellAlive(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the user's shell (pid %d) is gone: %v", pid, err)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
		t.Fatalf("the user's shell (pid %d) has exited", pid)
	}
}

// TestPromptNeverTypedIntoUsersShell: the agent the user started exits back to their
// shell; the runtime stays ready and Claude Code's pack reads the shell's screen as
// UNKNOWN, which lets a trigger through for an agent that queues input. Its multi-line
// prompt with `touch PWNED` must not reach the shell: the typing is refused (the pane's
// foreground program is a shell) and the trigger falls back as UNMANAGED_RUNTIME, which
// keeps the pane.
func TestPromptNeverTypedIntoUsersShell(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	td := startDaemon(t, cfg)
	dir := t.TempDir()
	u, pane, shell := userShellPane(t, dir)
	u.runInShell(pane, "sh -c '"+strings.ReplaceAll(claudeComposer, "'", `'\''`)+"head -n 1'")
	u.waitForeground(pane, "head")

	rt, err := td.register(api.RegisterRequest{Workspace: "consilio", Role: "ps", Agent: "claude", Target: "consilio-ps:0.0", TmuxSocket: u.name})
	if err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	u.runInShell(pane, "bye") // the agent exits: the user's shell is in the foreground again
	u.waitForeground(pane, "bash")

	prompt := "health check\ntouch PWNED\ntouch PWNED2"
	if _, err := td.trigger(map[string]any{"trigger_id": "sh1", "workspace": "consilio", "agent": "ps", "prompt": prompt}); err != nil {
		t.Fatal(err)
	}
	pwned := func(string) bool {
		_, err := os.Stat(filepath.Join(dir, "PWNED"))
		return err == nil
	}
	got := td.waitTrigger("sh1", func(tr nudge.Trigger) bool { return tr.Closed || pwned("") })
	story := td.audit("sh1")
	time.Sleep(300 * time.Millisecond) // a shell that got the text runs it at once
	for _, f := range []string{"PWNED", "PWNED2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("the prompt ran in the user's shell (%s created); receipt %+v\nstory %s", f, got, events(story))
		}
	}
	if strings.Contains(events(story), "trigger_sent") {
		t.Fatalf("the trigger was typed: %s", events(story))
	}
	refused := false
	for _, r := range story {
		if r.Event == "fallback_required" && r.Code == "UNMANAGED_RUNTIME" && strings.Contains(r.Reason, "shell bash") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no fallback_required with UNMANAGED_RUNTIME naming the shell; receipt %+v\nstory %+v", got, story)
	}
	shellAlive(t, shell)
	if now := u.tmux("display-message", "-p", "-t", pane, "#{pane_pid} #{pane_dead}"); now != strconv.Itoa(shell)+" 0" {
		t.Fatalf("the user's pane: %q, want its shell %d alive", now, shell)
	}
}

// TestFallbackNeverEndsUsersShell: the agent the user started from their shell (a
// stand-in that never acks) takes a trigger and never answers; the ack timeout's
// fallback must not end the user's shell (before: SIGHUP, and the agent relaunched in its
// place). The pane is the user's own: the chain keeps it and launches nothing there.
func TestFallbackNeverEndsUsersShell(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.Chain.LaunchGrace = 300 * time.Millisecond
	cfg.Inject.AckTimeout, cfg.Inject.AckRetries = time.Second, 0
	cfg.Panes.KillGrace = 300 * time.Millisecond
	// A stand-in claude on the daemon's PATH, so a resume or spawn could start.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	td := startDaemon(t, cfg)
	dir := t.TempDir()
	u, pane, shell := userShellPane(t, dir)
	u.runInShell(pane, "sh -c '"+strings.ReplaceAll(claudeComposer, "'", `'\''`)+"cat'")
	u.waitForeground(pane, "cat")

	rt, err := td.register(api.RegisterRequest{Workspace: "consilio", Role: "ps", Agent: "claude", Target: "consilio-ps:0.0",
		TmuxSocket: u.name, SessionID: "0b5e3a57-5f0d-4c41-9d0c-4a3c7c3f8e11"})
	if err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	if _, err := td.trigger(map[string]any{"trigger_id": "fb1", "workspace": "consilio", "agent": "ps", "prompt": "report status"}); err != nil {
		t.Fatal(err)
	}
	got := td.waitTrigger("fb1", closed)
	story := td.audit("fb1")
	if !strings.Contains(events(story), "fallback_required") {
		t.Fatalf("no fallback: receipt %+v\nstory %s", got, events(story))
	}
	time.Sleep(2 * cfg.Panes.KillGrace) // an ending in progress would have gone on
	shellAlive(t, shell)
	if now := u.tmux("display-message", "-p", "-t", pane, "#{pane_pid} #{pane_dead}"); now != strconv.Itoa(shell)+" 0" {
		t.Fatalf("the user's pane: %q, want its shell %d alive; receipt %+v\nstory %s", now, shell, got, events(story))
	}
	for _, r := range story {
		if r.Event == "fallback_resume_started" || r.Event == "runtime_program_ended" {
			t.Fatalf("the fallback launched in the user's pane: %s %s\nstory %s", r.Event, r.Detail, events(story))
		}
	}
}
