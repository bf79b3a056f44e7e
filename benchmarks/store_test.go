package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
	bolt "go.etcd.io/bbolt"
)

// bareBoltCommit is the baseline's measurement, run beside ours so a loaded machine
// shows in both: one single-key bbolt Update with a 300-byte value.
func bareBoltCommit(tb testing.TB, noSync bool) func(i int) error {
	bdb, err := bolt.Open(filepath.Join(tb.TempDir(), "bare.db"), 0o600, &bolt.Options{NoSync: noSync})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bdb.Close() })
	val := []byte(strings.Repeat("v", 300))
	return func(i int) error {
		return bdb.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(fmt.Sprintf("k%08d", i)), val)
		})
	}
}

// storeModes are the commit modes measured: the default (fdatasync per commit) and
// NoSync. "2tx" is the obvious alternative to CreateTrigger's one transaction: the
// trigger and its audit record committed separately.
var storeModes = []struct {
	name   string
	noSync bool
	twoTx  bool
}{
	{"fsync", false, false},
	{"fsync-2tx", false, true},
	{"nosync", true, false},
}

func storeTrigger(i int) nudge.Trigger {
	return nudge.Trigger{
		TriggerID: fmt.Sprintf("bench-%08d", i), WorkspaceID: "ws", Agent: "reviewer",
		ThreadID: "thread-1", Prompt: strings.Repeat("x", 200), State: "queued", Result: "queued",
	}
}

// commitTrigger stores trigger i and its audit record the way the API does.
func commitTrigger(db *store.DB, i int, twoTx bool) error {
	audit := &nudge.AuditRecord{Event: "trigger_received", Subject: "uid:1000", Reason: "bench"}
	if !twoTx {
		_, _, err := db.Triggers().CreateTrigger(storeTrigger(i), audit)
		return err
	}
	if _, _, err := db.Triggers().CreateTrigger(storeTrigger(i), nil); err != nil {
		return err
	}
	audit.TriggerID = storeTrigger(i).TriggerID
	_, err := db.AuditLog().AppendAudit(*audit)
	return err
}

func openBenchStore(tb testing.TB, noSync bool) *store.DB {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "nudge.db"), store.Options{NoSync: noSync})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkStoreCreateTrigger measures one trigger+audit commit, reporting latency
// percentiles alongside ns/op.
func BenchmarkStoreCreateTrigger(b *testing.B) {
	for _, m := range storeModes {
		b.Run(m.name, func(b *testing.B) {
			db := openBenchStore(b, m.noSync)
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				start := time.Now()
				if err := commitTrigger(db, i, m.twoTx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			p := percentiles(lat)
			b.ReportMetric(p[0], "p50-µs")
			b.ReportMetric(p[1], "p95-µs")
			b.ReportMetric(p[2], "p99-µs")
		})
	}
}

// percentiles returns p50, p95, p99 and max of lat in µs. It sorts lat.
func percentiles(lat []time.Duration) [4]float64 {
	if len(lat) == 0 {
		return [4]float64{}
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	return [4]float64{at(0.50), at(0.95), at(0.99), at(1)}
}

// TestStoreLatency prints commit latency percentiles over 1000 commits (after 20
// warm-up commits) per mode, in the form of the baseline table in
// shared/reference/latency-baseline.md. It only runs with NUDGE_BENCH=1 and asserts
// nothing about time.
func TestStoreLatency(t *testing.T) {
	if os.Getenv("NUDGE_BENCH") != "1" {
		t.Skip("set NUDGE_BENCH=1 to measure")
	}
	const warm, n = 20, 1000
	t.Logf("| CreateTrigger+audit commit | p50 µs | p95 µs | p99 µs | max µs |")
	for _, m := range storeModes {
		db := openBenchStore(t, m.noSync)
		logLatency(t, m.name, warm, n, func(i int) error { return commitTrigger(db, i, m.twoTx) })
	}
	logLatency(t, "bare bbolt 1-key Update, fsync", warm, n, bareBoltCommit(t, false))
	logLatency(t, "bare bbolt 1-key Update, nosync", warm, n, bareBoltCommit(t, true))
}

func logLatency(t *testing.T, name string, warm, n int, commit func(i int) error) {
	lat := make([]time.Duration, 0, n)
	for i := range warm + n {
		start := time.Now()
		if err := commit(i); err != nil {
			t.Fatal(err)
		}
		if i >= warm {
			lat = append(lat, time.Since(start))
		}
	}
	p := percentiles(lat)
	t.Logf("| %s | %.0f | %.0f | %.0f | %.0f |", name, p[0], p[1], p[2], p[3])
}
