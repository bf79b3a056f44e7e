package approvals

import (
	"context"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject/native"
)

// TestMatchOnlyTheScreensCommand: a request is answered over the channel only when its
// command is the one the screen's dialog shows, and only when one request is: a dialog
// the agent drew itself (no request behind it, or another command's) goes to its keys.
func TestMatchOnlyTheScreensCommand(t *testing.T) {
	pending := []native.Approval{
		{Command: "/bin/bash -lc 'touch a.txt'", Commands: []string{"touch a.txt"}},
		{Command: "/bin/bash -lc 'rm -rf build'", Commands: []string{"rm -rf build"}},
	}
	for _, c := range []struct {
		command string
		want    int
	}{
		{"touch a.txt", 0},
		{"/bin/bash -lc 'rm -rf build'", 1},
		{"rm -rf build", 1},
		{"touch b.txt", -1},           // drawn, not asked
		{"", -1},                      // the screen shows no command
		{"touch a.txt; rm -rf /", -1}, // not the command asked
	} {
		if got := match(pending, c.command); got != c.want {
			t.Errorf("match(%q) = %d, want %d", c.command, got, c.want)
		}
	}
	twice := append(pending, native.Approval{Command: "x", Commands: []string{"touch a.txt"}})
	if got := match(twice, "touch a.txt"); got != -1 {
		t.Errorf("two requests of one command: %d, want -1 (ambiguous: keys)", got)
	}
}

// TestAnswerWithoutLinkTypes: with no subscription for the runtime, or an option that is
// neither yes nor no, nothing goes over a channel (the caller types the keys).
func TestAnswerWithoutLinkTypes(t *testing.T) {
	f := &Follower{links: map[string]*link{}}
	d := nudge.Dialog{Command: "touch a.txt", ApproveKey: "y", DenyKey: "Escape"}
	for _, key := range []string{"y", "Escape", "p"} {
		if via, err := f.Answer(context.Background(), nudge.Runtime{RuntimeID: "w.x"}, d, nudge.DialogOption{Key: key}); via != "" || err != nil {
			t.Errorf("key %s: via %q, %v", key, via, err)
		}
	}
	f.links["w.x"] = &link{pending: []native.Approval{{Command: "touch a.txt", Commands: []string{"touch a.txt"}}}} // not connected
	if via, _ := f.Answer(context.Background(), nudge.Runtime{RuntimeID: "w.x"}, d, nudge.DialogOption{Key: "y"}); via != "" {
		t.Errorf("answered over a link that is not connected: %q", via)
	}
	var none *Follower
	if via, err := none.Answer(context.Background(), nudge.Runtime{}, d, nudge.DialogOption{Key: "y"}); via != "" || err != nil {
		t.Errorf("nil follower: %q %v", via, err)
	}
}
