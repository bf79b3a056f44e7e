package controlmode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink records what a Conn writes to tmux's stdin, one entry per Write call.
type sink struct {
	mu     sync.Mutex
	writes []string
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *sink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.writes, "")
}

// harness is a Conn over pipes: the test plays tmux.
type harness struct {
	c      *Conn
	tmux   *io.PipeWriter // what tmux writes
	stdin  *sink
	mu     sync.Mutex
	events []string
	output map[int][]byte
	chunks [][]byte
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{stdin: &sink{}, output: map[int][]byte{}}
	cfg.Session = "s"
	cfg.OnEvent = func(ev Event) {
		h.mu.Lock()
		h.events = append(h.events, describe(ev))
		h.mu.Unlock()
	}
	cfg.OnOutput = func(pane int, data []byte, age time.Duration) {
		h.mu.Lock()
		h.output[pane] = append(h.output[pane], data...)
		h.chunks = append(h.chunks, append([]byte(nil), data...))
		h.mu.Unlock()
	}
	r, w := io.Pipe()
	h.c, h.tmux = newConn(cfg, r, h.stdin), w
	go h.c.run()
	t.Cleanup(func() {
		w.Close()
		h.c.Close()
	})
	return h
}

// feed writes lines as tmux output.
func (h *harness) feed(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.tmux, l+"\n"); err != nil {
			t.Fatalf("feed %q: %v", l, err)
		}
	}
}

// end closes tmux's output and waits for the connection to finish.
func (h *harness) end(t *testing.T) {
	t.Helper()
	h.tmux.Close()
	select {
	case <-h.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end after EOF")
	}
}

func (h *harness) eventLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// describe renders an event for comparison: "Pause {Pane:0}".
func describe(ev Event) string {
	if u, ok := ev.(*Unsolicited); ok {
		return fmt.Sprintf("Unsolicited %q error=%v", u.Reply.Lines, u.Error)
	}
	s := fmt.Sprintf("%T %+v", ev, ev)
	return strings.NewReplacer("*controlmode.", "", "&", "").Replace(s)
}

// outcome renders a completed call: "reply [...]" or "error: ...".
func outcome(call *Call) string {
	select {
	case <-call.Done:
	case <-time.After(10 * time.Second):
		return "pending"
	}
	if call.Err != nil {
		return "error: " + call.Err.Error()
	}
	return fmt.Sprintf("reply %q", call.Reply.Lines)
}

// transcript is a recorded exchange: "> " lines were sent by the client, "< " lines
// written by tmux, "#" lines are comments.
type transcript struct {
	steps []step
}

type step struct {
	send bool
	line string
}

func readTranscript(t *testing.T, name string) transcript { return readTranscriptF(t, name) }

func readTranscriptF(t testing.TB, name string) transcript {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tr transcript
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "> "):
			tr.steps = append(tr.steps, step{send: true, line: l[2:]})
		case strings.HasPrefix(l, "< "):
			tr.steps = append(tr.steps, step{line: l[2:]})
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			t.Fatalf("%s: bad transcript line %q", name, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// play runs a transcript: sends go through Conn.Go, tmux lines are fed; then EOF.
func (h *harness) play(t *testing.T, tr transcript) []*Call {
	t.Helper()
	var calls []*Call
	for _, s := range tr.steps {
		if s.send {
			calls = append(calls, h.c.Go(s.line))
			continue
		}
		h.feed(t, s.line)
	}
	h.end(t)
	return calls
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = bytes.Equal
