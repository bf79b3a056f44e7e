package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// BenchmarkHTTPUnixRoundTrip is what any HTTP API over a unix socket costs a trigger on
// this machine, before any work of nudge's: a kept-alive client POSTs a trigger's body, a
// bare net/http handler decodes it (encoding/json, unknown fields refused) and answers a
// 1 KB JSON receipt (decoded-p50: the request written → decoded in the handler). Each request follows 5 ms of idle, as in nudgebench's single-trigger
// phase (-gap): the goroutines involved wake from sleep, as a daemon's do. Its p50 beside
// that phase's floor says how close to the floor a daemon with an HTTP API can come.
func BenchmarkHTTPUnixRoundTrip(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	receipt := bytes.Repeat([]byte("x"), 1000)
	var decoded atomic.Int64 // when the handler had the request decoded (UnixNano)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.TriggerRequest
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		decoded.Store(time.Now().UnixNano())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(map[string]any{"trigger_id": req.TriggerID, "state": "submitted", "pad": string(receipt)}) //nolint:errcheck // a benchmark
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	body, _ := json.Marshal(api.TriggerRequest{TriggerID: "t1", Workspace: "ws", Agent: "a", Prompt: prompt80})
	post := func() {
		resp, err := client.Post("http://nudge/v1/triggers", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // a benchmark
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	post() // the connection
	lat := make([]time.Duration, 0, b.N)
	in := make([]time.Duration, 0, b.N) // request written → decoded by the handler
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		time.Sleep(5 * time.Millisecond)
		b.StartTimer()
		t := time.Now()
		post()
		lat = append(lat, time.Since(t))
		in = append(in, time.Duration(decoded.Load()-t.UnixNano()))
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(in)
	b.ReportMetric(float64(in[len(in)/2].Microseconds()), "decoded-p50-µs")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
