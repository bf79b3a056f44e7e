package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
	bolt "go.etcd.io/bbolt"
)

// TestStoreRetentionSoak writes N triggers (NUDGE_BENCH_RETAIN=N; skipped without it)
// at NUDGE_BENCH_RATE a second (default 100: the daemon sustains about 40) through the
// store the way the daemon's pipeline does, with the default fsync: per
// trigger the accept's lookup of the id (GetTrigger) and its create (create log, with
// its audit record), three receipts written behind (injected, submitted, acked: closed),
// each with an audit record, a runtime write and five events (the event hub's window:
// the newest 10,000), a Flush every 10 triggers as the acks' flushes gather them. A
// simulated clock moves 2 s per trigger. It runs twice on fresh files: without
// retention, and with a 1 h window (1,800 triggers) whose passes run on their own
// goroutine beside the accepts, every 500 triggers, as the store's loop would. Each
// 1,000 triggers it logs the file's size, the pages in use and free, and the accept's
// p50/p99 (lookup + create, wall clock) over those 1,000; at the end the bytes each
// bucket holds per trigger kept, and the file after a reopen that compacts. The store
// grown without retention then meets a first pass (an upgrade) before that reopen.
func TestStoreRetentionSoak(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NUDGE_BENCH_RETAIN"))
	if n <= 0 {
		t.Skip("set NUDGE_BENCH_RETAIN=10000 to run (a soak, not a CI test)")
	}
	for _, retain := range []bool{false, true} {
		name := map[bool]string{false: "no-retention", true: "retain-1h"}[retain]
		t.Run(name, func(t *testing.T) { soak(t, n, retain) })
	}
}

type simClock struct{ ns atomic.Int64 }

func (c *simClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *simClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func soak(t *testing.T, n int, retain bool) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nudge.db")
	clk := &simClock{}
	clk.ns.Store(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	db, err := store.Open(path, store.Options{Now: clk.now, IdleAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := store.Retention{Window: time.Hour, AuditDir: filepath.Join(dir, "audit")}
	var passes sync.WaitGroup
	var removed, sealed, txs atomic.Int64
	lat := make([]time.Duration, 0, 1000)
	event := []byte(`{"seq":1,"time":"2026-11-22T19:00:00Z","type":"trigger","workspace":"bench","trigger":` +
		`{"trigger_id":"x","state":"injected","prompt":"` + strings.Repeat("p", 200) + `","created_at":"2026-11-22T19:00:00Z"}}`)
	evSeq := uint64(0)
	rate, _ := strconv.Atoi(os.Getenv("NUDGE_BENCH_RATE"))
	if rate <= 0 {
		rate = 100
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 1; i <= n; i++ {
		<-tick.C
		tr := storeTrigger(i)
		tr.RuntimeID = fmt.Sprintf("rt_bench.r%02d", i%20)
		start := time.Now()
		if _, err := db.Triggers().GetTrigger(tr.TriggerID); err == nil {
			t.Fatal("a new id is known")
		}
		if _, _, err := db.Triggers().CreateTriggerQuick(tr, &nudge.AuditRecord{Event: "trigger_received", Reason: "bench"}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		deliver(db, tr, clk, &evSeq, event)
		if i%10 == 0 {
			db.Flush()
		}
		if i%1000 == 0 {
			db.Events().TrimEventsLater(store.EventWindow{Keep: 10_000})
		}
		if retain && i%500 == 0 {
			passes.Add(1)
			go func() {
				defer passes.Done()
				st := db.Retain(context.Background(), r)
				if st.Err != nil {
					t.Error(st.Err)
				}
				removed.Add(int64(st.Triggers))
				sealed.Add(int64(st.AuditSealed))
				txs.Add(int64(st.Transactions))
			}()
		}
		if i%1000 == 0 {
			p := percentiles(lat)
			t.Logf("%6d triggers: file %5.1f MB, pages %5.1f MB, free %5.1f MB; accept p50 %.2f ms p99 %.2f ms; removed %d, audit sealed %d",
				i, mb(fileSizeOf(t, path)), mb(pagesInUse(db)), mb(freeOf(db)), p[0]/1000, p[2]/1000, removed.Load(), sealed.Load())
			lat = lat[:0]
		}
	}
	passes.Wait()
	db.Flush()
	if _, err := db.AuditLog().VerifyAudit(); err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	if retain {
		seq, hash, _ := db.AuditLog().AuditArchived()
		if _, err := store.VerifyArchive(r.AuditDir, seq, hash); err != nil {
			t.Fatalf("VerifyArchive: %v", err)
		}
	}
	kept, _ := db.Triggers().ListTriggers(store.TriggerFilter{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("end: %d triggers kept, %d retention transactions; file %.1f MB", len(kept), txs.Load(), mb(fileSizeOf(t, path)))
	bucketSizes(t, path, len(kept))
	if !retain {
		// An upgrade: a store grown without retention meets its first pass.
		db, err = store.Open(path, store.Options{Now: clk.now, CompactFree: -1, IdleAfter: -1})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st := db.Retain(context.Background(), r)
		sp := db.Space()
		t.Logf("a first pass on it: %d triggers removed, %d audit records sealed in %d transactions (%.1f s); file %.1f MB, pages %.1f MB, free %.1f MB",
			st.Triggers, st.AuditSealed, st.Transactions, time.Since(start).Seconds(), mb(sp.File), mb(sp.Pages), mb(sp.Free))
		db.Close()
	}
	start := time.Now()
	db, err = store.Open(path, store.Options{CompactFree: 1 << 20, IdleAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Logf("after a reopen that compacts (free >= 1 MiB and half the file; %.2f s): file %.1f MB", time.Since(start).Seconds(), mb(fileSizeOf(t, path)))
}

// deliver writes what delivering tr costs the store: three receipts with an audit
// record each (the last closes it), a runtime write and five events.
func deliver(db *store.DB, tr nudge.Trigger, clk *simClock, evSeq *uint64, event []byte) {
	rt := nudge.Runtime{RuntimeID: tr.RuntimeID, WorkspaceID: "bench", Role: "r", Agent: "bench", Managed: true,
		TmuxSession: "agents_bench", Target: "agents_bench:r.0", PaneID: "%1", PID: 1234, Status: nudge.StatusReady, Readiness: "READY"}
	for _, st := range []nudge.TriggerState{nudge.StateInjected, nudge.StateSubmitted, nudge.StateAcked} {
		clk.advance(600 * time.Millisecond)
		tr.State, tr.Closed = st, st == nudge.StateAcked
		db.Triggers().PutTriggerLater(tr, nudge.AuditRecord{Event: "trigger_" + string(st),
			Detail: []byte(`{"attempt":1,"target":"%1","typed":true,"echo_seen":true,"collision_gate":"enforced"}`)})
	}
	db.Runtimes().PutRuntimeLater(rt)
	evs := make([]store.Event, 5)
	for k := range evs {
		*evSeq++
		evs[k] = store.Event{Seq: *evSeq, Time: clk.now(), Data: event}
	}
	db.Events().AppendEventsLater(nil, evs...)
	clk.advance(200 * time.Millisecond)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func fileSizeOf(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func pagesInUse(db *store.DB) int64 { return db.Space().Pages }
func freeOf(db *store.DB) int64     { return db.Space().Free }

// bucketSizes logs each bucket's bytes (pages allocated to it) per trigger kept.
func bucketSizes(t *testing.T, path string, kept int) {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	type row struct {
		name        string
		keys        int
		alloc, used int
	}
	var rows []row
	_ = bdb.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			rows = append(rows, row{string(name), s.KeyN, s.BranchAlloc + s.LeafAlloc, s.BranchInuse + s.LeafInuse})
			return nil
		})
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].alloc > rows[j].alloc })
	for _, r := range rows {
		t.Logf("  bucket %-12s %7d keys, %6.2f MB in pages (%3.0f%% filled), %6.0f bytes per kept trigger",
			r.name, r.keys, mb(int64(r.alloc)), 100*float64(r.used)/float64(max(r.alloc, 1)), float64(r.alloc)/float64(max(kept, 1)))
	}
}
