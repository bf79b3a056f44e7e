package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

func openStore(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func openHub(t *testing.T, cfg Config, db *store.DB) *Hub {
	t.Helper()
	h, err := Open(cfg, db.Events())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func publishN(h *Hub, ws string, n int) []Event {
	var out []Event
	for i := range n {
		out = append(out, h.Publish(Event{Type: "test", Workspace: ws, Detail: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}))
	}
	return out
}

func seqsOf(evs []Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// Numbers go on across a restart, and the events published before it replay after it.
func TestSequenceSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db := openStore(t, path)
	h := openHub(t, Config{}, db)
	before := publishN(h, "a", 3)
	if fmt.Sprint(seqsOf(before)) != "[1 2 3]" {
		t.Fatalf("first numbers: %v", seqsOf(before))
	}
	h.Close()
	db.Close()

	db = openStore(t, path)
	defer db.Close()
	h = openHub(t, Config{}, db)
	defer h.Close()
	after := h.Publish(Event{Type: "test"})
	if after.Seq <= 3 {
		t.Fatalf("after a restart the sequence went back to %d", after.Seq)
	}
	got, s, err := h.Replay(1)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unsubscribe(s)
	if fmt.Sprint(seqsOf(got)) != fmt.Sprint([]uint64{2, 3, after.Seq}) {
		t.Fatalf("replay since 1 = %v", seqsOf(got))
	}
	if !bytes.Equal(got[0].JSON(), before[1].JSON()) {
		t.Fatalf("replayed JSON %s, published %s", got[0].JSON(), before[1].JSON())
	}
}

// A replay hands over to the live feed with no gap and no duplicate, from memory and
// from the store.
func TestReplayThenFollow(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{Recent: 4}, db) // most of the backlog comes from the store
	defer h.Close()
	publishN(h, "a", 10)
	for _, since := range []uint64{0, 2, 7, 10} {
		last := h.Last()
		backlog, s, err := h.Replay(since)
		if err != nil {
			t.Fatalf("since %d: %v", since, err)
		}
		live := h.Publish(Event{Type: "live"})
		var want []uint64
		for i := since + 1; i <= last; i++ {
			want = append(want, i)
		}
		if fmt.Sprint(seqsOf(backlog)) != fmt.Sprint(want) {
			t.Errorf("since %d: backlog %v, want %v", since, seqsOf(backlog), want)
		}
		if ev := <-s.C; ev.Seq != live.Seq {
			t.Errorf("since %d: first live event %d, want %d", since, ev.Seq, live.Seq)
		}
		h.Unsubscribe(s)
	}
}

// A reader behind the kept window is told which events it missed.
func TestReplayExpired(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{Keep: 5, Recent: 2}, db)
	defer h.Close()
	publishN(h, "a", 12)
	h.trim()
	db.Flush()
	_, _, err := h.Replay(3)
	var ee *ExpiredError
	if !errors.As(err, &ee) {
		t.Fatalf("since 3: %v, want an ExpiredError", err)
	}
	if ee.Trimmed != 7 || ee.Resume() != 7 {
		t.Fatalf("expired %+v", ee)
	}
	var ne *nudge.Error
	if !errors.As(err, &ne) || ne.Code != nudge.EventsExpired {
		t.Fatalf("as nudge.Error: %v", err)
	}
	if backlog, s, err := h.Replay(7); err != nil || fmt.Sprint(seqsOf(backlog)) != "[8 9 10 11 12]" {
		t.Fatalf("since 7: %v %v", seqsOf(backlog), err)
	} else {
		h.Unsubscribe(s)
	}
	if _, _, err := h.Replay(99); !errors.As(err, &ee) {
		t.Fatalf("since 99 (ahead of the log): %v", err)
	}
	if backlog, s, err := h.Replay(0); err != nil || len(backlog) != 5 {
		t.Fatalf("since 0 (all kept): %v %v", seqsOf(backlog), err)
	} else {
		h.Unsubscribe(s)
	}
}

// Events older than MaxAge leave the window.
func TestTrimByAge(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
	defer db.Close()
	var now atomic.Int64 // the hub's background trim reads the clock too
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	h := openHub(t, Config{MaxAge: time.Hour, Recent: 1, Now: clock}, db)
	defer h.Close()
	publishN(h, "a", 3)
	now.Add(int64(2 * time.Hour))
	publishN(h, "a", 1)
	h.trim()
	db.Flush()
	if _, _, err := h.Replay(1); err == nil {
		t.Fatal("since 1 after the first three aged out: no error")
	}
	if backlog, s, err := h.Replay(3); err != nil || fmt.Sprint(seqsOf(backlog)) != "[4]" {
		t.Fatalf("since 3: %v %v", seqsOf(backlog), err)
	} else {
		h.Unsubscribe(s)
	}
}

// The default stream is NDJSON byte for byte as json.Encoder writes an Event; SSE has an
// id: line per event, and Last-Event-ID resumes after it. Only what show passes is sent.
func TestServeFormats(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{Recent: 2}, db) // the older ones come from the store
	published := append(publishN(h, "a", 2), publishN(h, "b", 2)...)
	onlyA := func(ev Event) bool { return ev.Workspace == "a" }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Serve(w, r, onlyA); err != nil {
			var ne *nudge.Error
			errors.As(err, &ne)
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, ne.Code)
		}
	}))
	defer srv.Close()
	defer h.Close() // ends the streams before the server closes

	get := func(path string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	// NDJSON from the start, then a live event.
	resp := get("/v1/events?since=0", nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	live := h.Publish(Event{Type: "live", Workspace: "a", Runtime: map[string]string{"runtime_id": "rt_a.x"}})
	for _, want := range []Event{published[0], published[1], live} {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		json.NewEncoder(&enc).Encode(want)
		if !bytes.Equal(line, enc.Bytes()) {
			t.Fatalf("line %q\nwant %q (json.Encoder)", line, enc.Bytes())
		}
	}

	// SSE resumed with Last-Event-ID (which wins over since).
	resp2 := get("/v1/events?since=0", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "1"})
	defer resp2.Body.Close()
	if ct := resp2.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	br2 := bufio.NewReader(resp2.Body)
	for _, want := range []Event{published[1], live} {
		var block []string
		for {
			line, err := br2.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\n" {
				break
			}
			block = append(block, strings.TrimSuffix(line, "\n"))
		}
		wantBlock := []string{fmt.Sprintf("id: %d", want.Seq), "data: " + string(want.JSON())}
		if fmt.Sprint(block) != fmt.Sprint(wantBlock) {
			t.Fatalf("SSE block %q, want %q", block, wantBlock)
		}
	}

	// Too old / bad position: answered before any stream.
	h.log.TrimEventsLater(store.EventWindow{Keep: 1})
	db.Flush()
	resp3 := get("/v1/events?since=1", nil)
	body := new(bytes.Buffer)
	body.ReadFrom(resp3.Body)
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusGone || body.String() != string(nudge.EventsExpired) {
		t.Fatalf("expired: %d %q", resp3.StatusCode, body)
	}
	resp4 := get("/v1/events?since=x", nil)
	resp4.Body.Close()
	if resp4.StatusCode != http.StatusGone { // the fake handler answers every error so
		t.Fatalf("bad since: %d", resp4.StatusCode)
	}
}

// TestObserve: an observer gets every published event in order, numbered and with its
// JSON, and none once its stop has returned.
func TestObserve(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
	defer db.Close()
	h := openHub(t, DefaultConfig(), db)
	defer h.Close()
	var got []Event
	stop := h.Observe(func(ev Event) { got = append(got, ev) })
	published := publishN(h, "w1", 3)
	stop()
	publishN(h, "w1", 2)
	if len(got) != 3 {
		t.Fatalf("observed %d events, want 3", len(got))
	}
	for i, ev := range got {
		if ev.Seq != published[i].Seq || ev.JSON() == nil {
			t.Errorf("event %d: seq %d (published %d), JSON %q", i, ev.Seq, published[i].Seq, ev.JSON())
		}
	}
}
