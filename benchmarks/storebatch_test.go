package benchmarks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// BenchmarkStoreFanoutBatch is the write-behind work of a 100-pane fan-out (one op = 100
// triggers): per trigger the create (create log + commit, with its audit record), the
// injected, submitted and acked receipts each with an audit record, three runtime writes
// (triggering, last trigger, ready) and five events, then one Flush for the lot, as the
// acks' flushes gather them. "update" writes the receipts the way the pipeline did before
// PutTriggerLater (UpdateTriggerLater overwriting the stored record); "put" the way it
// does now. ns/op is CPU and I/O of the whole batch (NoSync: no fsync wait).
func BenchmarkStoreFanoutBatch(b *testing.B) {
	for _, mode := range []string{"update", "put"} {
		b.Run(mode, func(b *testing.B) {
			db := openBenchStore(b, true)
			b.ReportAllocs()
			seq := 0
			for b.Loop() {
				fanoutBatch(b, db, mode == "put", &seq)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100/1000, "µs/trigger")
		})
	}
}

func fanoutBatch(b *testing.B, db *store.DB, put bool, seq *int) {
	event := []byte(`{"seq":1,"time":"2026-11-22T19:00:00Z","type":"trigger","workspace":"bench","trigger":` +
		`{"trigger_id":"x","state":"injected","prompt":"` + strings.Repeat("p", 80) + `","created_at":"2026-11-22T19:00:00Z"}}` +
		strings.Repeat(" ", 400))
	now := time.Now()
	for i := range 100 {
		*seq++
		t := storeTrigger(*seq)
		t.RuntimeID = fmt.Sprintf("rt_bench.r%03d", i)
		if _, _, err := db.Triggers().CreateTriggerQuick(t, &nudge.AuditRecord{Event: "trigger_received", Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		rt := nudge.Runtime{RuntimeID: t.RuntimeID, WorkspaceID: "bench", Role: fmt.Sprintf("r%03d", i), Agent: "bench",
			Argv: []string{"nudgebench", "-pane-reader", "/tmp/x.sock", "r"}, Managed: true, TmuxSession: "agents_bench",
			Target: "agents_bench:r.0", PaneID: "%1", PID: 1234, Status: nudge.StatusReady, Readiness: "READY", CreatedAt: now}
		for k, st := range []nudge.TriggerState{nudge.StateInjected, nudge.StateSubmitted, nudge.StateAcked} {
			t.State = st
			t.Closed = st == nudge.StateAcked
			a := nudge.AuditRecord{Event: "trigger_" + string(st), Detail: []byte(`{"attempt":1,"target":"%1","typed":true,"echo_seen":true,"collision_gate":"enforced"}`)}
			if put {
				db.Triggers().PutTriggerLater(t, a)
			} else {
				t := t
				db.Triggers().UpdateTriggerLater(t.TriggerID, func(r *nudge.Trigger) error { *r = t; return nil }, a)
			}
			rt.Status = []nudge.Status{nudge.StatusTriggering, nudge.StatusTriggering, nudge.StatusReady}[k]
			db.Runtimes().PutRuntimeLater(rt)
		}
		evs := make([]store.Event, 5)
		for k := range evs {
			evs[k] = store.Event{Seq: uint64(*seq*5 + k), Time: now, Data: event}
		}
		db.Events().AppendEventsLater(nil, evs...)
	}
	db.Flush()
}
