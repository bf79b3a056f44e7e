package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

func runtime(role string, readiness nudge.Readiness) api.Runtime {
	return api.Runtime{Runtime: nudge.Runtime{RuntimeID: "rt_w." + role, WorkspaceID: "w", Role: role, Agent: "codex",
		Status: nudge.StatusReady, Readiness: readiness}}
}

func TestStateWord(t *testing.T) {
	for i, c := range []struct {
		status    nudge.Status
		readiness nudge.Readiness
		paused    bool
		want      string
	}{
		{nudge.StatusReady, nudge.Ready, false, "READY"},
		{nudge.StatusReady, nudge.NeedsConfirmation, false, "NEEDS_CONFIRMATION"},
		{nudge.StatusReady, nudge.Ready, true, "PAUSED"},
		{nudge.StatusPaused, nudge.Busy, false, "PAUSED"},
		{nudge.StatusOffline, nudge.Ready, true, "OFFLINE"},
		{nudge.StatusExited, "", false, "EXITED"},
		{nudge.StatusReady, "", false, "UNKNOWN"},
	} {
		if got := StateWord(c.status, c.readiness, c.paused); got != c.want {
			t.Errorf("#%d: got %q, want %q", i, got, c.want)
		}
	}
	if got := ReceiptWord(nudge.StateFailed, "timeout", "ACK_TIMEOUT", "tmux"); got != "failed/timeout ACK_TIMEOUT (tmux)" {
		t.Errorf("ReceiptWord = %q", got)
	}
}

// A card says what a person needs at a glance: the state word, badges in a fixed order,
// the open triggers, the newest receipt (reply before prompt, cut) and the dialog.
func TestFleetCards(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := runtime("a", nudge.Busy), runtime("b", nudge.NeedsConfirmation)
	b.Paused, b.OperatorBusy = true, true
	b.Dialog = &nudge.Dialog{DialogID: "d1", Title: "Run rm?", Command: "rm -rf build", Options: []nudge.DialogOption{{Key: "1", Label: "Yes"}, {Key: "3", Label: "No"}},
		ApproveKey: "1", DenyKey: "3"}
	f := NewFleet()
	f.Reset([]api.Runtime{b, a}, []api.Trigger{
		{TriggerID: "t1", WorkspaceID: "w", Agent: "a", State: nudge.StateAcked, Closed: true, Prompt: "p1", Reply: "done", CreatedAt: now},
		{TriggerID: "t2", WorkspaceID: "w", Agent: "a", RuntimeID: "rt_w.a", State: nudge.StateQueued, Prompt: strings.Repeat("x", 500), CreatedAt: now.Add(time.Second)},
		{TriggerID: "t3", WorkspaceID: "w", Agent: "b", State: nudge.StateDeferred, Prompt: "later", CreatedAt: now},
	})
	cs := f.Cards()
	if len(cs) != 2 || cs[0].RuntimeID != "rt_w.a" || cs[1].RuntimeID != "rt_w.b" {
		t.Fatalf("cards: %+v", cs)
	}
	ca, cb := cs[0], cs[1]
	if ca.State != "BUSY" || ca.Queue != 1 || ca.Last == nil || ca.Last.TriggerID != "t2" || len([]rune(ca.Last.Text)) != ReceiptText ||
		!strings.HasSuffix(ca.Last.Text, "…") || len(ca.Badges) != 0 || ca.Dialog != nil {
		t.Fatalf("card a: %+v last %+v", ca, ca.Last)
	}
	if cb.State != "PAUSED" || strings.Join(cb.Badges, ",") != "paused,operator typing,dialog waits" || cb.Queue != 1 ||
		cb.Dialog == nil || cb.Dialog.DialogID != "d1" || cb.Dialog.ApproveKey != "1" || len(cb.Dialog.Options) != 2 || cb.Last.Word != "deferred" {
		t.Fatalf("card b: %+v", cb)
	}
	if f.Deferred("rt_w.b") != "t3" {
		t.Fatalf("deferred %q", f.Deferred("rt_w.b"))
	}

	// The stream: t2 acked with its reply, b's dialog goes, a readiness change, a
	// runtime deregistered.
	f.PutTrigger(api.Trigger{TriggerID: "t2", WorkspaceID: "w", Agent: "a", State: nudge.StateAcked, Result: "delivered", Closed: true, Reply: "all green", CreatedAt: now.Add(time.Second)})
	b.Dialog = nil
	f.PutRuntime(b)
	f.SetReadiness("rt_w.a", nudge.Ready, "idle", false)
	ca, _ = f.Card("rt_w.a")
	cb, _ = f.Card("rt_w.b")
	if ca.State != "READY" || ca.Queue != 0 || ca.Last.Text != "all green" || ca.Last.Word != "acked/delivered" || !ca.Last.Closed {
		t.Fatalf("card a after its ack: %+v last %+v", ca, ca.Last)
	}
	if cb.Dialog != nil || strings.Join(cb.Badges, ",") != "paused,operator typing" {
		t.Fatalf("card b after its dialog: %+v", cb)
	}
	a.Status = nudge.StatusDeregistered
	f.PutRuntime(a)
	if _, ok := f.Card("rt_w.a"); ok || f.Len() != 1 {
		t.Fatal("a deregistered runtime kept its card")
	}
}

// The card's JSON is what the web view's fleet page reads: its field names are a contract
// with app.js.
func TestCardJSON(t *testing.T) {
	f := NewFleet()
	f.Reset([]api.Runtime{runtime("a", nudge.Ready)}, nil)
	b, err := json.Marshal(f.Cards())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"runtime_id":"rt_w.a","workspace_id":"w","role":"a","agent":"codex","state":"READY","status":"ready","readiness":"READY","badges":[],"queue":0}]`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
