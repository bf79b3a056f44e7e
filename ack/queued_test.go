package ack

import (
	"context"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// TestQueuedTriggerAckedOnlyByItsTurn: a prompt queued in the busy agent is not acked by
// the heartbeats of the turn still running, only by the marker or, once the agent took
// it up (Dequeued), by a later heartbeat.
func TestQueuedTriggerAckedOnlyByItsTurn(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewTracker(TrackerConfig{Now: func() time.Time { return now }})
	k.Expect(nudge.Trigger{TriggerID: "q1", RuntimeID: "rt"})
	k.Handed("rt", "q1") // typed: the agent queued it
	k.Queued("q1")
	now = now.Add(time.Second)
	k.Heartbeat("rt", now, "c1")
	k.Heartbeat("rt", now, "c2")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if sig, err := k.Wait(ctx, "q1"); err == nil {
		t.Fatalf("queued trigger acked by the running turn's %s", sig)
	}
	k.Dequeued("rt", now.Add(time.Second))
	k.Heartbeat("rt", now.Add(500*time.Millisecond), "") // before the agent took it
	k.Heartbeat("rt", now.Add(2*time.Second), "")
	if sig, err := k.Wait(context.Background(), "q1"); err != nil || sig != SignalHeartbeat {
		t.Fatalf("after Dequeued: %q, %v", sig, err)
	}
}

// TestOfflineHeartbeatAcksNothing: a heartbeat whose status is offline acks no trigger,
// and its cursor is one a later heartbeat must advance past (seed 000 §10.3).
func TestOfflineHeartbeatAcksNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewTracker(TrackerConfig{Now: func() time.Time { return now }})
	k.Expect(nudge.Trigger{TriggerID: "t1", RuntimeID: "rt"})
	k.Handed("rt", "t1")
	now = now.Add(time.Second)
	k.Offline("rt", "c9")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if sig, err := k.Wait(ctx, "t1"); err == nil {
		t.Fatalf("an offline heartbeat acked the trigger by %s", sig)
	}
	if k.Heartbeat("rt", now, "c9") {
		t.Fatal("the offline heartbeat's cursor, sent again, counted as an advance")
	}
}

// TestAPIAckNeedsHanded: an API ack (the agent's own runtime token may send one) acks a
// trigger only once its prompt was handed to the runtime, as its marker, its record and
// its heartbeats do: a trigger whose wait began but that was not typed yet (its typing
// held by a look at the pane, a lost connection) is not marked acked, never to be typed.
func TestAPIAckNeedsHanded(t *testing.T) {
	k := NewTracker(TrackerConfig{})
	k.Expect(nudge.Trigger{TriggerID: "t1", RuntimeID: "rt"})
	if k.APIAck("t1") {
		t.Fatal("an API ack acked a trigger not handed to its runtime yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if sig, err := k.Wait(ctx, "t1"); err == nil {
		t.Fatalf("not handed, acked by %s", sig)
	}
	k.Handed("rt", "t1")
	if !k.APIAck("t1") {
		t.Fatal("an API ack of a handed trigger was refused")
	}
	if sig, err := k.Wait(context.Background(), "t1"); err != nil || sig != SignalAPI {
		t.Fatalf("handed, API ack: %q, %v", sig, err)
	}
}
