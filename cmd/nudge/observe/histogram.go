package observe

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
)

// Histogram is a Prometheus histogram with fixed upper bounds, written with cumulative
// le buckets so that stock Prometheus computes quantiles from it (histogram_quantile).
// Update is lock-free and safe for concurrent use.
//
// It is ours rather than the metrics library's PrometheusHistogram: that type arrived in
// VictoriaMetrics/metrics v1.38, whose package init logs a line to stderr on every start
// of the binary (CLI commands included) wherever cgroup v2 has no PSI files.
type Histogram struct {
	name   string
	bounds []float64       // ascending upper bounds; +Inf is implied
	counts []atomic.Uint64 // per bucket, not cumulative; the last is (bounds[len-1], +Inf)
	sum    atomic.Uint64   // float64 bits
}

// NewHistogram returns a histogram with the given ascending, finite upper bounds.
func NewHistogram(name string, bounds []float64) *Histogram {
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || (i > 0 && b <= bounds[i-1]) {
			panic(fmt.Sprintf("observe: histogram %s: bounds must be finite and ascending: %v", name, bounds))
		}
	}
	return &Histogram{name: name, bounds: append([]float64(nil), bounds...),
		counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Update records one observation v (seconds, for nudge's histograms).
func (h *Histogram) Update(v float64) {
	if math.IsNaN(v) {
		return
	}
	h.counts[sort.SearchFloat64s(h.bounds, v)].Add(1) // the first bound >= v: le is inclusive
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Count is the number of observations so far.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// writeTo writes the family's samples (no # lines): one _bucket per bound and +Inf,
// cumulative, then _sum and _count. _count is always the +Inf bucket, even while
// observations land during the write.
func (h *Histogram) writeTo(w io.Writer) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", h.name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", h.name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", h.name, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", h.name, cum)
}
