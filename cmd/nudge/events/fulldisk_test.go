package events

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// A full disk, for real: the tests below run their daemon half in a child process (this
// test binary again) whose RLIMIT_FSIZE is lowered to the store file's size, so that
// the next commit that grows the file fails with EFBIG, as on a full disk; raising the
// soft limit again is the space coming back. A crash is SIGKILL of that child.

// childDirEnv names the directory a child works in; its presence makes a Child test run.
const childDirEnv = "NUDGE_EVENTS_CHILD_DIR"

// runChild runs the test named name in a child process working in dir and returns it
// started, with its stdout. The child's stderr goes to the test's log on failure.
func runChild(t *testing.T, name, dir string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("child %s stderr:\n%s", name, stderr.String())
		}
	})
	return cmd, bufio.NewReader(out)
}

// finishChild reads the child's output to the end and fails the test if it failed.
func finishChild(t *testing.T, cmd *exec.Cmd, out *bufio.Reader) {
	t.Helper()
	var all strings.Builder
	for {
		line, err := out.ReadString('\n')
		all.WriteString(line)
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(all.String(), "\nPASS") {
		t.Fatalf("child: %v\n%s", err, all.String())
	}
}

// childDir returns the directory a child works in, or skips the test when it is not run
// as a child.
func childDir(t *testing.T) string {
	d := os.Getenv(childDirEnv)
	if d == "" {
		t.Skip("run as a child by its parent test")
	}
	return d
}

// limitFileSize sets this process's RLIMIT_FSIZE soft limit (the hard one stays).
func limitFileSize(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = capAt(n, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &rl); err != nil {
		t.Fatal(err)
	}
}

// capAt is min(n, limit) in the limit's type (uint64 on Linux and macOS, int64 on
// FreeBSD, whose RLIM_INFINITY is the largest int64).
func capAt[T int64 | uint64](n uint64, limit T) T {
	if n < uint64(limit) {
		return T(n)
	}
	return limit
}

// fillDisk lowers the file-size limit to the store file's size and publishes events
// (each ~2 KiB) until the store reports that it cannot write; it returns them.
func fillDisk(t *testing.T, h *Hub, db *store.DB) []Event {
	t.Helper()
	db.Flush()
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	limitFileSize(t, uint64(fi.Size()))
	var out []Event
	for i := 0; db.Unavailable() == nil; i++ {
		if i > 20_000 {
			t.Fatalf("the store still writes after %d events past a file-size limit of %d", i, fi.Size())
		}
		out = append(out, bigEvent(h, i))
		if i%50 == 49 {
			db.Flush() // let the writer meet the limit
		}
	}
	if err := db.Unavailable(); !errors.Is(err, syscall.EFBIG) && !strings.Contains(err.Error(), syscall.EFBIG.Error()) {
		t.Fatalf("store unavailable with %v, want EFBIG", err)
	}
	return out
}

func bigEvent(h *Hub, i int) Event {
	return h.Publish(Event{Type: "test", Workspace: "a", Detail: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 2000)))})
}

// numbered returns the Seqs of the events that were given a number.
func numbered(evs []Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		if e.Seq != 0 {
			out = append(out, e.Seq)
		}
	}
	return out
}

// after returns the seqs above since.
func after(seqs []uint64, since uint64) []uint64 {
	var out []uint64
	for _, s := range seqs {
		if s > since {
			out = append(out, s)
		}
	}
	return out
}

// checkReplay fails unless Replay(since) is complete (exactly want, in order) or says
// it cannot be (an ExpiredError). It returns the error.
func checkReplay(t *testing.T, h *Hub, since uint64, want []uint64) error {
	t.Helper()
	got, s, err := h.Replay(since)
	var ee *ExpiredError
	switch {
	case errors.As(err, &ee):
		return err
	case err != nil:
		t.Fatalf("replay since %d: %v", since, err)
	}
	h.Unsubscribe(s)
	if fmt.Sprint(seqsOf(got)) != fmt.Sprint(want) {
		t.Errorf("replay since %d: %d events, not complete and no EVENTS_EXPIRED:\n got %v\nwant %v",
			since, len(got), short(seqsOf(got)), short(want))
	}
	return nil
}

// short shortens a long list of seqs for a failure message: its runs as a-b.
func short(seqs []uint64) string {
	var b strings.Builder
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if i == j {
			fmt.Fprintf(&b, "%d ", seqs[i])
		} else {
			fmt.Fprintf(&b, "%d-%d ", seqs[i], seqs[j])
		}
		i = j + 1
	}
	return strings.TrimSpace(b.String())
}

// While the store cannot write (a full disk), a replay from before the failure is
// complete: the events the store has not written are held in memory, not only the
// newest Recent of them. Once it writes again they are written, in order, and are there
// after a restart; the numbers go on above them. (Before, a replay reaching past the
// in-memory ring silently skipped the unwritten events.)
func TestReplayAcrossFullDisk(t *testing.T) {
	dir := t.TempDir()
	cmd, out := runChild(t, "TestChildReplayAcrossFullDisk", dir)
	finishChild(t, cmd, out)

	db := openStore(t, filepath.Join(dir, "nudge.db"))
	defer db.Close()
	st, err := db.Events().EventLog()
	if err != nil || st.Unclean || st.Lost != 0 {
		t.Fatalf("after a clean close: %+v %v", st, err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "seqs"))
	if err != nil {
		t.Fatal(err)
	}
	h := openHub(t, Config{Recent: 16}, db)
	defer h.Close()
	got, s, err := h.Replay(10)
	if err != nil {
		t.Fatal(err)
	}
	h.Unsubscribe(s)
	if short(seqsOf(got)) != strings.TrimSpace(string(want)) {
		t.Fatalf("after a restart, since 10: %s\nwant %s", short(seqsOf(got)), want)
	}
	if ev := h.Publish(Event{Type: "test"}); ev.Seq <= st.Last {
		t.Fatalf("after a restart numbering went back to %d (last written %d)", ev.Seq, st.Last)
	}
}

func TestChildReplayAcrossFullDisk(t *testing.T) {
	dir := childDir(t)
	db := openStore(t, filepath.Join(dir, "nudge.db"))
	h := openHub(t, Config{Recent: 16}, db)
	all := publishN(h, "a", 20)
	all = append(all, fillDisk(t, h, db)...)
	for i := range 300 { // well past the ring
		all = append(all, bigEvent(h, i))
	}
	if db.Unavailable() == nil {
		t.Fatal("the store writes again while the limit holds")
	}
	seqs := numbered(all)
	if len(seqs) != len(all) {
		t.Fatalf("%d events were not numbered", len(all)-len(seqs))
	}
	for _, since := range []uint64{0, 10, seqs[len(seqs)-200]} {
		if err := checkReplay(t, h, since, after(seqs, since)); err != nil {
			t.Errorf("since %d: %v (nothing was dropped: the replay can be complete)", since, err)
		}
	}

	limitFileSize(t, ^uint64(0)) // space returns
	deadline := time.Now().Add(30 * time.Second)
	for db.Unavailable() != nil || h.Stats().Unwritten > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not written after the space returned: %v, %+v", db.Unavailable(), h.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stored, _, err := db.Events().EventsSince(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if short(seqsOf(storedEvents(stored))) != short(seqs) {
		t.Fatalf("written after recovery: %s\nwant %s", short(seqsOf(storedEvents(stored))), short(seqs))
	}
	if st := h.Stats(); st.Lost != 0 {
		t.Fatalf("stats %+v", st)
	}
	h.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "seqs"), []byte(short(after(seqs, 10))+"\n"), 0o600)
}

// smallBuffers accepts its first connection with a small send buffer (small buffers
// on both ends also make a fast reader slow: delayed acknowledgements).
type smallBuffers struct {
	net.Listener
	n atomic.Int32
}

func (l *smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && l.n.Add(1) == 1 {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

func storedEvents(se []store.Event) []Event {
	out := make([]Event, len(se))
	for i, e := range se {
		out[i] = Event{Seq: e.Seq}
	}
	return out
}

// Past the backlog bound the oldest held events are dropped, and a replay from before
// them says so (EVENTS_EXPIRED, resume after the newest dropped), in memory and, once
// the store writes again, after a restart too; a replay from there on is complete.
func TestFullDiskBacklogOverflow(t *testing.T) {
	dir := t.TempDir()
	cmd, out := runChild(t, "TestChildFullDiskBacklogOverflow", dir)
	finishChild(t, cmd, out)

	db := openStore(t, filepath.Join(dir, "nudge.db"))
	defer db.Close()
	st, err := db.Events().EventLog()
	if err != nil || st.Lost == 0 || st.Unclean {
		t.Fatalf("after the overflow and a clean close: %+v %v", st, err)
	}
	h := openHub(t, Config{}, db)
	defer h.Close()
	var ee *ExpiredError
	if _, _, err := h.Replay(5); !errors.As(err, &ee) || ee.Resume() != st.Lost || !strings.Contains(err.Error(), "could not be written") {
		t.Fatalf("since 5 after a restart: %v (lost through %d)", err, st.Lost)
	}
	if _, s, err := h.Replay(st.Lost); err != nil {
		t.Fatalf("since the lost mark: %v", err)
	} else {
		h.Unsubscribe(s)
	}
}

func TestChildFullDiskBacklogOverflow(t *testing.T) {
	dir := childDir(t)
	db := openStore(t, filepath.Join(dir, "nudge.db"))
	h := openHub(t, Config{Recent: 16, Backlog: 100}, db)
	all := publishN(h, "a", 20)
	all = append(all, fillDisk(t, h, db)...)
	for i := range 300 {
		all = append(all, bigEvent(h, i))
	}
	seqs := numbered(all)
	_, _, err := h.Replay(5)
	var ee *ExpiredError
	if !errors.As(err, &ee) || ee.Lost == 0 {
		t.Fatalf("since 5 after the backlog overflowed: %v, want EVENTS_EXPIRED", err)
	}
	var ne *nudge.Error
	if !errors.As(err, &ne) || ne.Code != nudge.EventsExpired {
		t.Fatalf("as nudge.Error: %v", err)
	}
	lost := ee.Resume()
	if err := checkReplay(t, h, lost, after(seqs, lost)); err != nil {
		t.Fatalf("since the resume point %d: %v", lost, err)
	}
	if st := h.Stats(); st.Lost == 0 || st.Unwritten < 100 {
		t.Fatalf("stats %+v", st)
	}
	limitFileSize(t, ^uint64(0))
	deadline := time.Now().Add(30 * time.Second)
	for db.Unavailable() != nil || h.Stats().Unwritten > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not written after the space returned: %v, %+v", db.Unavailable(), h.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := checkReplay(t, h, lost, after(seqs, lost)); err != nil {
		t.Fatalf("since %d after recovery: %v", lost, err)
	}
	h.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// A live stream cut while the disk is full (its reader fell behind) resumes from its
// Last-Event-ID with every event it missed, or with EVENTS_EXPIRED: never with a silent
// jump in the numbers.
func TestLiveStreamResumesAcrossFullDisk(t *testing.T) {
	dir := t.TempDir()
	cmd, out := runChild(t, "TestChildLiveStreamResumesAcrossFullDisk", dir)
	finishChild(t, cmd, out)
}

func TestChildLiveStreamResumesAcrossFullDisk(t *testing.T) {
	dir := childDir(t)
	db := openStore(t, filepath.Join(dir, "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{Recent: 16, Buffer: 8}, db)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Serve(w, r, func(Event) bool { return true }); err != nil {
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, err)
		}
	}))
	srv.Listener = &smallBuffers{Listener: srv.Listener} // a reader that stops reading is soon felt
	srv.Start()
	defer srv.Close()
	defer h.Close() // first: it ends the streams the server waits for
	slow := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}}}
	defer slow.CloseIdleConnections()
	get := func(client *http.Client, last uint64, query string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/events"+query, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	all := publishN(h, "a", 20)
	resp := get(slow, 2, "")
	br := bufio.NewReader(resp.Body)
	readID := func() (uint64, bool) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return 0, false
			}
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				return n, true
			}
		}
	}
	var last uint64
	for last < 20 {
		n, ok := readID()
		if !ok {
			t.Fatal("stream ended early")
		}
		last = n
	}
	// The reader stops reading; the disk fills up; its stream is cut.
	all = append(all, fillDisk(t, h, db)...)
	for i := range 400 {
		all = append(all, bigEvent(h, i))
	}
	for {
		n, ok := readID()
		if !ok {
			break
		}
		if n != last+1 {
			t.Fatalf("live stream jumped from %d to %d", last, n)
		}
		last = n
	}
	resp.Body.Close()
	seqs := numbered(all)
	if last >= seqs[len(seqs)-1] {
		t.Fatalf("the stream was never cut (last %d)", last)
	}
	// It resumes where it was cut.
	resp = get(http.DefaultClient, last, "?follow=0")
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		return // said so: fine
	}
	br = bufio.NewReader(resp.Body)
	for _, want := range after(seqs, last) {
		n, ok := readID()
		if !ok || n != want {
			t.Fatalf("resumed after %d: got %d (%v), want %d: a silent jump", last, n, ok, want)
		}
	}
	limitFileSize(t, ^uint64(0))
}

// refusingDisk is the store behind a disk that refuses every write while full is set:
// a reservation fails, the store says it cannot write, and what is queued meanwhile is
// lost (as by a crash before the disk recovers). On the real store a reservation is a
// small commit that often still fits in the file's free pages; this is the case where
// it does not.
type refusingDisk struct {
	*store.Events
	full atomic.Bool
}

var errNoSpace = fmt.Errorf("write: %w", syscall.ENOSPC)

func (d *refusingDisk) Unavailable() error {
	if d.full.Load() {
		return errNoSpace
	}
	return d.Events.Unavailable()
}

func (d *refusingDisk) ReserveEvents(through uint64) error {
	if d.full.Load() {
		return errNoSpace
	}
	return d.Events.ReserveEvents(through)
}

func (d *refusingDisk) AppendEventsLater(after func(error), evs ...store.Event) {
	if !d.full.Load() {
		d.Events.AppendEventsLater(after, evs...)
	}
}

func (d *refusingDisk) LoseEventsLater(through uint64) {
	if !d.full.Load() {
		d.Events.LoseEventsLater(through)
	}
}

// Numbers are never given out above the reservation on disk: when the store cannot take
// a reservation, events past it are dropped unnumbered, live streams end, a replay is
// refused (UNAVAILABLE) until the store writes again, and then the dropped events' place
// has a number of its own, so a reader resuming from before it gets EVENTS_EXPIRED.
// After a crash in the middle of that, numbering goes on above everything a reader saw,
// and a replay from before the crash says what it cannot give. (Before, numbering ran
// on past the reservation, and after a crash the numbers readers had seen were given to
// new events.)
func TestNumbersStayAboveTheReservation(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			db := openStore(t, filepath.Join(t.TempDir(), "nudge.db"))
			defer db.Close()
			disk := &refusingDisk{Events: db.Events()}
			var logged syncBuffer
			logger := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Info})
			h, err := Open(Config{Recent: 16, Buffer: 3 * reserveBlock, Backlog: 3 * reserveBlock, Logger: logger}, disk)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			s := h.Subscribe()
			publishN(h, "a", 20)
			db.Flush()
			disk.full.Store(true)
			var dropped bool
			for i := 0; i < 3*reserveBlock && !dropped; i++ {
				dropped = h.Publish(Event{Type: "test", Workspace: "a"}).Seq == 0
			}
			var seen uint64
			for len(s.C) > 0 {
				ev := <-s.C
				if seen != 0 && ev.Seq != seen+1 {
					t.Fatalf("live jump from %d to %d", seen, ev.Seq)
				}
				seen = ev.Seq
			}
			if crash {
				h.Close() // what it held is lost with the disk
				h, err = Open(Config{}, db.Events())
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				if ev := h.Publish(Event{Type: "test"}); ev.Seq <= seen {
					t.Fatalf("after the crash numbering went back to %d: a reader saw %d", ev.Seq, seen)
				}
				var ee *ExpiredError
				if _, _, err := h.Replay(5); !errors.As(err, &ee) {
					t.Fatalf("since 5, after a crash that lost events up to %d: %v, want EVENTS_EXPIRED", seen, err)
				}
				return
			}
			if !dropped {
				t.Fatalf("%d events numbered past a reservation that could not grow", 3*reserveBlock)
			}
			select {
			case <-s.Dropped:
			default:
				t.Fatal("an event was dropped unnumbered, but the live stream goes on")
			}
			var ne *nudge.Error
			if _, _, err := h.Replay(seen); !errors.As(err, &ne) || ne.Code != nudge.Unavailable {
				t.Fatalf("replay while events are dropped: %v, want UNAVAILABLE", err)
			}
			disk.full.Store(false)
			deadline := time.Now().Add(30 * time.Second)
			for {
				_, s2, err := h.Replay(seen)
				var ee *ExpiredError
				if errors.As(err, &ee) {
					if ee.Resume() != seen+1 {
						t.Fatalf("expired %+v: the gap should be %d", ee, seen+1)
					}
					break
				}
				if err == nil {
					h.Unsubscribe(s2)
					t.Fatalf("replay since %d after events were dropped unnumbered: no EVENTS_EXPIRED", seen)
				}
				if time.Now().After(deadline) {
					t.Fatalf("replay still refused after the disk recovered: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if ev := h.Publish(Event{Type: "test"}); ev.Seq != seen+2 {
				t.Fatalf("after the gap: %d, want %d", ev.Seq, seen+2)
			}
			if st := h.Stats(); st.Lost == 0 {
				t.Fatalf("stats %+v", st)
			}
			// One warning per kind of trouble in the episode, not one per event.
			for _, msg := range []string{"[WARN]  events cannot be written", "[WARN]  event numbers cannot be reserved",
				"[WARN]  event numbers ran out", "[INFO]  event numbers are reserved again", "[INFO]  events are written again"} {
				if n := strings.Count(logged.String(), msg); n != 1 {
					t.Errorf("%q logged %d times, want once:\n%s", msg, n, logged.String())
				}
			}
		})
	}
}

// syncBuffer is a strings.Builder safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A crash (SIGKILL) while the disk is full, after live readers got events the store
// could not write: after the restart a replay from before them says it cannot give them
// (EVENTS_EXPIRED), and numbering goes on above what the readers saw.
func TestCrashWhileDiskFull(t *testing.T) {
	dir := t.TempDir()
	cmd, out := runChild(t, "TestChildCrashWhileDiskFull", dir)
	seen := readSeen(t, cmd, out)
	cmd.Process.Kill() // SIGKILL: a crash
	cmd.Wait()

	db := openStore(t, filepath.Join(dir, "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{}, db)
	defer h.Close()
	if ev := h.Publish(Event{Type: "test"}); ev.Seq <= seen {
		t.Fatalf("after the crash numbering went back to %d: a reader saw %d", ev.Seq, seen)
	}
	var ee *ExpiredError
	if _, _, err := h.Replay(5); !errors.As(err, &ee) {
		t.Fatalf("since 5, after a crash that lost events up to %d: %v, want EVENTS_EXPIRED", seen, err)
	}
}

func TestChildCrashWhileDiskFull(t *testing.T) {
	dir := childDir(t)
	db := openStore(t, filepath.Join(dir, "nudge.db"))
	h := openHub(t, Config{Recent: 16}, db)
	s := h.Subscribe()
	publishN(h, "a", 20)
	fillDisk(t, h, db)
	for i := range 300 {
		bigEvent(h, i)
	}
	var seen uint64
	for len(s.C) > 0 {
		seen = (<-s.C).Seq
	}
	fmt.Printf("seen %d\n", seen)
	select {} // until killed
}

// readSeen reads the child's "seen N" line.
func readSeen(t *testing.T, cmd *exec.Cmd, out *bufio.Reader) uint64 {
	t.Helper()
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("the child ended before it crashed: %v", err)
		}
		if v, ok := strings.CutPrefix(line, "seen "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
}

// A crash (SIGKILL) right after live readers got events: a replay after the restart is
// complete or says it cannot be; numbering goes on above what they saw.
func TestCrashAfterLiveDelivery(t *testing.T) {
	dir := t.TempDir()
	cmd, out := runChild(t, "TestChildCrashAfterLiveDelivery", dir)
	seen := readSeen(t, cmd, out)
	cmd.Process.Kill()
	cmd.Wait()

	db := openStore(t, filepath.Join(dir, "nudge.db"))
	defer db.Close()
	h := openHub(t, Config{Recent: 16}, db)
	defer h.Close()
	want := make([]uint64, 0, seen)
	for i := uint64(11); i <= seen; i++ {
		want = append(want, i)
	}
	got, s, err := h.Replay(10)
	var ee *ExpiredError
	switch {
	case errors.As(err, &ee):
		t.Logf("since 10 after the crash: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		h.Unsubscribe(s)
		if short(seqsOf(got)) != short(want) {
			t.Fatalf("since 10 after the crash: %s, want %s or EVENTS_EXPIRED", short(seqsOf(got)), short(want))
		}
	}
	if ev := h.Publish(Event{Type: "test"}); ev.Seq <= seen {
		t.Fatalf("after the crash numbering went back to %d: a reader saw %d", ev.Seq, seen)
	}
}

func TestChildCrashAfterLiveDelivery(t *testing.T) {
	dir := childDir(t)
	db := openStore(t, filepath.Join(dir, "nudge.db"))
	h := openHub(t, Config{Recent: 16}, db)
	publishN(h, "a", 20)
	db.Flush()
	s := h.Subscribe()
	var seen uint64
	for i := range 500 {
		bigEvent(h, i)
		seen = (<-s.C).Seq
	}
	fmt.Printf("seen %d\n", seen)
	select {} // until killed
}
