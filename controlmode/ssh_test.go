package controlmode

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The remote command of SSHArgv is parsed by the remote user's shell: every word must
// come back exactly, whatever it holds, and nothing in it may run.
func TestSSHArgvRoundTripsThroughAShell(t *testing.T) {
	argv := []string{"tmux", "-L", "sock", "send-keys", "-l", "--",
		"it's $HOME `id` $(id) ; rm -rf / && echo \"x\" | cat \\ \n\t*?[a]", "", "'", "''", "-F", "#{pane_id}"}
	got := SSHArgv("", "/cfg", "user@box", argv)
	if want := []string{"ssh", "-F", "/cfg", "-T", "--", "user@box"}; !slices.Equal(got[:6], want) || len(got) != 7 {
		t.Fatalf("argv %q", got)
	}
	if got := SSHArgv("myssh", "", "-oProxyCommand=x", []string{"tmux"}); !slices.Equal(got, []string{"myssh", "-T", "--", "-oProxyCommand=x", "'tmux'"}) {
		t.Fatalf("argv %q", got) // the host can never be read as an option: it follows --
	}
	// Replace the program by printf, which prints each word NUL-terminated.
	remote := strings.Replace(got[6], "'tmux'", `printf '%s\0'`, 1)
	out, err := exec.Command("sh", "-c", remote).Output()
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(words, argv[1:]) {
		t.Fatalf("the shell read %q\nwant %q", words, argv[1:])
	}
}
