package main

import (
	"math"
	"testing"
)

func TestHistogramQuantiles(t *testing.T) {
	before, err := parseHistogram(`# TYPE x_seconds histogram
x_seconds_bucket{le="0.0001"} 1
x_seconds_bucket{le="0.001"} 1
x_seconds_bucket{le="0.01"} 1
x_seconds_bucket{le="+Inf"} 1
`, "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseHistogram(`x_seconds_bucket{le="0.0001"} 11
x_seconds_bucket{le="0.001"} 91
x_seconds_bucket{le="0.01"} 100
x_seconds_bucket{le="+Inf"} 101
x_seconds_sum 1
x_seconds_count 101
`, "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	n, q := after.since(before).quantiles(0.05, 0.5, 0.95, 1)
	want := []float64{100, 1000, 10000, math.Inf(1)}
	if n != 100 {
		t.Errorf("n = %v, want 100", n)
	}
	for i := range want {
		if q[i] != want[i] {
			t.Errorf("#%d: got %v µs, want %v", i, q[i], want[i])
		}
	}
	if _, err := parseHistogram("y 1\n", "x_seconds"); err == nil {
		t.Error("no error for a missing histogram")
	}
}
