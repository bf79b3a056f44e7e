package permhook

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// asked is one Ask in flight: its decision arrives on got.
type asked struct{ got chan Decision }

func ask(k *Keeper, rt nudge.Runtime, req Request) asked {
	a := asked{got: make(chan Decision, 1)}
	go func() {
		d, _ := k.Ask(context.Background(), rt, req)
		a.got <- d
	}()
	return a
}

func (a asked) wait(t *testing.T) Decision {
	t.Helper()
	select {
	case d := <-a.got:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("the hook's request was never answered or released")
		return Decision{}
	}
}

func (a asked) pending(t *testing.T) {
	t.Helper()
	select {
	case d := <-a.got:
		t.Fatalf("the request ended (%+v) while its dialog is up", d)
	case <-time.After(50 * time.Millisecond):
	}
}

func heldN(t *testing.T, k *Keeper, id string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(k.Held(id)) != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests held for %s, want %d", len(k.Held(id)), id, n)
		}
	}
}

func dialog(id, command string) nudge.Dialog {
	return nudge.Dialog{DialogID: id, Command: command, ApproveKey: "1", DenyKey: "3",
		Options: []nudge.DialogOption{{Key: "1", Label: "Yes"}, {Key: "3", Label: "No"}}}
}

func newKeeper(t *testing.T) (*Keeper, *nudge.Bus) {
	bus := nudge.NewBus()
	k := Open(Config{Bus: bus})
	t.Cleanup(func() { k.Close(); bus.Close() })
	return k, bus
}

// shown publishes rt's screen showing d (nil: none) and waits until the Keeper has it.
func shown(t *testing.T, k *Keeper, bus *nudge.Bus, rt nudge.Runtime, d *nudge.Dialog) {
	t.Helper()
	nudge.Publish(bus, nudge.ReadinessChanged{RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, Readiness: nudge.NeedsConfirmation, Dialog: d})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		k.mu.Lock()
		cur := k.dialog[rt.RuntimeID]
		k.mu.Unlock()
		if (d == nil && cur == nil) || (d != nil && cur != nil && cur.DialogID == d.DialogID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the keeper never read the screen's dialog")
		}
	}
}

var rt = nudge.Runtime{RuntimeID: "rt_ws.dev", WorkspaceID: "ws", Status: nudge.StatusReady, SessionID: "s-1"}

// TestAnswerGoesToTheRequestOfTheScreensCommand: approve and deny go to the hook's request
// whose command is the screen's dialog's; a deny carries the reason.
func TestAnswerGoesToTheRequestOfTheScreensCommand(t *testing.T) {
	k, bus := newKeeper(t)
	a := ask(k, rt, Request{SessionID: "s-1", Tool: "Bash", Command: "touch a.txt"})
	heldN(t, k, rt.RuntimeID, 1)
	d := dialog("d1", "touch a.txt")
	shown(t, k, bus, rt, &d)
	via, err := k.Answer(context.Background(), rt, d, nudge.DialogOption{Key: "1"}, "")
	if via != Backend || err != nil {
		t.Fatalf("answer: %q %v", via, err)
	}
	if got := a.wait(t); got.Behavior != "allow" {
		t.Fatalf("the hook got %+v, want allow", got)
	}
	b := ask(k, rt, Request{SessionID: "s-1", Tool: "Bash", Command: "rm -rf build"})
	heldN(t, k, rt.RuntimeID, 1)
	d2 := dialog("d2", "rm -rf build")
	shown(t, k, bus, rt, &d2)
	if via, _ := k.Answer(context.Background(), rt, d2, nudge.DialogOption{Key: "3"}, "not that one"); via != Backend {
		t.Fatalf("deny went by %q", via)
	}
	if got := b.wait(t); got.Behavior != "deny" || got.Message != "not that one" {
		t.Fatalf("the hook got %+v, want deny with the reason", got)
	}
}

// TestRequestsTheScreenDoesNotShowAreNotAnswered: the agent is the adversary and may call
// its hook itself. A request of another command than the screen's dialog, two requests of
// the screen's command, a request of another session, an option that is neither yes nor
// no, a dialog with no command: all are answered by keys (""), and nothing reaches a hook.
func TestRequestsTheScreenDoesNotShowAreNotAnswered(t *testing.T) {
	k, bus := newKeeper(t)
	other := ask(k, rt, Request{SessionID: "s-1", Tool: "Bash", Command: "touch evil"})
	heldN(t, k, rt.RuntimeID, 1)
	d := dialog("d1", "touch a.txt")
	shown(t, k, bus, rt, &d)
	for _, c := range []struct {
		name string
		d    nudge.Dialog
		opt  string
	}{
		{"another command", d, "1"},
		{"no command on screen", dialog("d1", ""), "1"},
		{"neither yes nor no", d, "2"},
	} {
		if via, err := k.Answer(context.Background(), rt, c.d, nudge.DialogOption{Key: c.opt}, ""); via != "" || err != nil {
			t.Errorf("%s: answered by %q %v, want keys", c.name, via, err)
		}
	}
	foreign := ask(k, rt, Request{SessionID: "s-other", Tool: "Bash", Command: "touch a.txt"})
	heldN(t, k, rt.RuntimeID, 2)
	if via, _ := k.Answer(context.Background(), rt, d, nudge.DialogOption{Key: "1"}, ""); via != "" {
		t.Errorf("a request naming another session was answered (%q)", via)
	}
	one := ask(k, rt, Request{SessionID: "s-1", Tool: "Bash", Command: "touch a.txt"})
	two := ask(k, rt, Request{Tool: "Bash", Command: "touch a.txt"})
	heldN(t, k, rt.RuntimeID, 4)
	if via, _ := k.Answer(context.Background(), rt, d, nudge.DialogOption{Key: "1"}, ""); via != "" {
		t.Errorf("one of two requests of the screen's command was answered (%q)", via)
	}
	same := dialog("d1", "touch a.txt")
	same.DenyKey = same.ApproveKey
	if via, _ := k.Answer(context.Background(), rt, same, nudge.DialogOption{Key: "1"}, ""); via != "" {
		t.Errorf("a dialog whose yes and no are one key was answered (%q)", via)
	}
	for _, a := range []asked{other, foreign, one, two} {
		a.pending(t)
	}
	// The dialog leaves the screen (answered there): every request held is released.
	shown(t, k, bus, rt, nil)
	for _, a := range []asked{other, foreign, one, two} {
		if got := a.wait(t); got.Behavior != "" {
			t.Fatalf("a released request got %+v", got)
		}
	}
	heldN(t, k, rt.RuntimeID, 0)
}

// TestDialogLeavingReleasesItsRequests: a request waits while no dialog has been seen, and
// while its dialog is up; when the dialog leaves the screen its request is released (the
// person at the screen answered), but a request of the command the next dialog asks for
// stays for that dialog. A runtime that ends releases its requests; the bound releases
// the oldest.
func TestDialogLeavingReleasesItsRequests(t *testing.T) {
	k, bus := newKeeper(t)
	a := ask(k, rt, Request{Tool: "Bash", Command: "touch a.txt"})
	heldN(t, k, rt.RuntimeID, 1)
	nudge.Publish(bus, nudge.ReadinessChanged{RuntimeID: rt.RuntimeID, Readiness: nudge.Busy}) // before the dialog is drawn
	d := dialog("d1", "touch a.txt")
	shown(t, k, bus, rt, &d)
	a.pending(t)
	b := ask(k, rt, Request{Tool: "Bash", Command: "touch b.txt"}) // the next, come before the screen is read
	heldN(t, k, rt.RuntimeID, 2)
	next := dialog("d2", "touch b.txt")
	shown(t, k, bus, rt, &next)
	if got := a.wait(t); got.Behavior != "" {
		t.Fatalf("the first request got %+v after its dialog left", got)
	}
	b.pending(t)
	if via, _ := k.Answer(context.Background(), rt, next, nudge.DialogOption{Key: "1"}, ""); via != Backend {
		t.Fatalf("the next dialog's request was not answered (%q)", via)
	}
	if got := b.wait(t); got.Behavior != "allow" {
		t.Fatalf("the next request got %+v", got)
	}

	c := ask(k, rt, Request{Tool: "Bash", Command: "touch c.txt"})
	heldN(t, k, rt.RuntimeID, 1)
	ended := rt
	ended.Status = nudge.StatusExited
	nudge.Publish(bus, nudge.RuntimeChanged{Runtime: ended})
	if got := c.wait(t); got.Behavior != "" {
		t.Fatalf("the request of an ended runtime got %+v", got)
	}

	var flood []asked
	for i := range maxOpen + 3 {
		flood = append(flood, ask(k, rt, Request{Tool: "Bash", Command: fmt.Sprint("touch ", i)}))
		heldN(t, k, rt.RuntimeID, min(i+1, maxOpen))
	}
	for _, a := range flood[:3] {
		if got := a.wait(t); got.Behavior != "" {
			t.Fatalf("a request over the bound got %+v", got)
		}
	}
}

// TestAskOfAnEndedRuntimeOrAfterClose: nothing is held for a runtime that is not live, or
// once the keeper is closed; Close releases what it held.
func TestAskOfAnEndedRuntimeOrAfterClose(t *testing.T) {
	k, _ := newKeeper(t)
	off := rt
	off.Status = nudge.StatusOffline
	if d, err := k.Ask(context.Background(), off, Request{Command: "x"}); d.Behavior != "" || err != nil {
		t.Fatalf("an offline runtime's request: %+v %v", d, err)
	}
	a := ask(k, rt, Request{Command: "x"})
	heldN(t, k, rt.RuntimeID, 1)
	k.Close()
	if got := a.wait(t); got.Behavior != "" {
		t.Fatalf("a request held at Close got %+v", got)
	}
	if d, _ := k.Ask(context.Background(), rt, Request{Command: "x"}); d.Behavior != "" {
		t.Fatalf("a request after Close got %+v", d)
	}
}
