package statusfiles

import (
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/detector"
)

// BenchmarkBusyPane measures the write rate on a busy pane: every op is one change a pane
// that prints without pause causes (its readiness flips BUSY/READY with a new summary, and
// a capture is taken), as fast as the hub delivers them. coalesced is the Writer's
// default (a write a second per file at most); per_change is the obvious alternative, a
// write per change. writes/s is the files written per second of the run, writes/op per
// change.
func BenchmarkBusyPane(b *testing.B) {
	for _, bc := range []struct {
		name string
		min  time.Duration
	}{{"coalesced", 0}, {"per_change", time.Nanosecond}} {
		b.Run(bc.name, func(b *testing.B) {
			dir, h := b.TempDir(), &fakeHub{}
			w := open(b, dir, Config{MinInterval: bc.min}, h)
			h.runtime(rt("rt_ws.a"))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				h.readiness("rt_ws.a", []nudge.Readiness{nudge.Busy, nudge.Ready}[i%2], "line")
				w.Snapshot("rt_ws.a", detector.Snapshot{Hash: "h", PolledAt: time.Now(), Stable: i})
			}
			w.Close()
			took := time.Since(start)
			b.ReportMetric(float64(w.Writes())/took.Seconds(), "writes/s")
			b.ReportMetric(float64(w.Writes())/float64(b.N), "writes/op")
		})
	}
}
