package inject

import (
	"context"
	"time"
)

// recordSyncer is an Acker that can read a runtime's own record to its end on demand
// (ack.Tracker.SyncRecord).
type recordSyncer interface {
	SyncRecord(ctx context.Context, runtimeID string)
}

// recordSyncWait bounds that read: a record that cannot be read that fast (its database
// locked) is left to the ack wait's own reads.
const recordSyncWait = 2 * time.Second

// inRecord reads runtimeID's record to its end, and reports whether trigger id is acked
// now: before any retype, retry or fallback, a prompt the agent has is found in its
// record even when the reader had not seen its write yet, and is never given again.
func inRecord(ctx context.Context, acks Acker, runtimeID, id string) (string, bool) {
	s, ok := acks.(recordSyncer)
	if !ok || runtimeID == "" {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, recordSyncWait)
	s.SyncRecord(ctx, runtimeID)
	cancel()
	return ackedNow(ctx, acks, id)
}
