package detector

import (
	"testing"
	"time"
)

// A capture like the one before counts as stable; one unlike it is a change, dated by the
// pane's last output before it.
func TestSnapshotOf(t *testing.T) {
	ps := &paneState{}
	t0 := time.Unix(1000, 0)
	ps.lastOut.Store(t0.Add(-time.Second).UnixNano())
	s := ps.snapshotOf("screen one", t0)
	if s.Hash == "" || s.Stable != 0 || !s.ChangedAt.Equal(t0.Add(-time.Second)) || !s.PolledAt.Equal(t0) {
		t.Fatalf("first: %+v", s)
	}
	for i := 1; i <= 3; i++ {
		if s = ps.snapshotOf("screen one", t0.Add(time.Duration(i)*time.Second)); s.Stable != i || !s.ChangedAt.Equal(t0.Add(-time.Second)) {
			t.Fatalf("#%d same screen: %+v", i, s)
		}
	}
	ps.lastOut.Store(t0.Add(5 * time.Second).UnixNano())
	prev := s.Hash
	if s = ps.snapshotOf("screen two", t0.Add(6*time.Second)); s.Hash == prev || s.Stable != 0 || !s.ChangedAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("changed screen: %+v", s)
	}
}
