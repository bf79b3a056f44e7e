package events

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkPublish is the cost a trigger's state change pays for its event: marshal once,
// number, queue for the store, offer to one subscriber. BenchmarkEncodeOnly is the old
// hub's cost per subscriber (an Encoder per stream), for comparison.
func BenchmarkPublish(b *testing.B) {
	db := openStore(&testing.T{}, filepath.Join(b.TempDir(), "nudge.db"))
	defer db.Close()
	h, err := Open(Config{}, db.Events())
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	s := h.Subscribe()
	go func() {
		for range s.C {
		}
	}()
	ev := benchEvent()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.Publish(ev)
	}
}

func BenchmarkEncodeOnly(b *testing.B) {
	ev := benchEvent()
	enc := json.NewEncoder(io.Discard)
	b.ReportAllocs()
	for range b.N {
		enc.Encode(ev)
	}
}

func benchEvent() Event {
	return Event{Type: "trigger", Workspace: "w1", Trigger: map[string]any{
		"trigger_id": "job-42", "workspace": "w1", "agent": "rev", "state": "submitted",
		"prompt": strings.Repeat("review the diff and report. ", 20)}}
}
