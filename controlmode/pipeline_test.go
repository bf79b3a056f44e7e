package controlmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestContextExpiryKeepsQueueInSync: an abandoned command's late reply is discarded and
// the next command gets its own reply.
func TestContextExpiryKeepsQueueInSync(t *testing.T) {
	h := newHarness(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.c.Do(ctx, "display -p slow")
		errc <- err
	}()
	waitFor(t, func() bool { return strings.Contains(h.stdin.all(), "slow") })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do: got %v, want context.Canceled", err)
	}
	second := h.c.Go("display -p fast")
	h.feed(t, "%begin 1 10 1", "slow", "%end 1 10 1", "%begin 1 11 1", "fast", "%end 1 11 1")
	if got, want := outcome(second), `reply ["fast"]`; got != want {
		t.Errorf("second: got %q, want %q", got, want)
	}
	if st := h.c.Stats(); st.Abandoned != 1 {
		t.Errorf("Abandoned = %d, want 1", st.Abandoned)
	}
}

func TestDoAllPipelinesInOneWrite(t *testing.T) {
	h := newHarness(t, Config{})
	type result struct {
		r   []*Reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.c.DoAll(context.Background(), "display -p a", "bad-cmd", "display -p c")
		done <- result{r, err}
	}()
	waitFor(t, func() bool { return h.stdin.all() != "" })
	h.feed(t, "%begin 1 1 1", "a", "%end 1 1 1", "%begin 1 2 1", "parse error: unknown command: bad-cmd",
		"%error 1 2 1", "%begin 1 3 1", "c", "%end 1 3 1")
	res := <-done
	var ce *CommandError
	if !errors.As(res.err, &ce) || ce.Cmd != "bad-cmd" || len(ce.Lines) != 1 {
		t.Errorf("err: got %v, want *CommandError for bad-cmd", res.err)
	}
	if len(res.r) != 3 || res.r[0].Lines[0] != "a" || res.r[1] != nil || res.r[2].Lines[0] != "c" {
		t.Errorf("replies: got %+v", res.r)
	}
	h.stdin.mu.Lock()
	writes := h.stdin.writes
	h.stdin.mu.Unlock()
	if len(writes) != 1 || writes[0] != "display -p a\nbad-cmd\ndisplay -p c\n" {
		t.Errorf("writes: got %q, want one write of three lines", writes)
	}
}

func TestUnsafeCommandNotSent(t *testing.T) {
	h := newHarness(t, Config{})
	for _, cmd := range []string{"", "a ; b", "x\ny"} {
		if _, err := h.c.Do(context.Background(), cmd); !errors.Is(err, ErrUnsafeCommand) {
			t.Errorf("Do(%q): got %v, want ErrUnsafeCommand", cmd, err)
		}
	}
	if _, err := h.c.DoAll(context.Background(), "display ok", "a;b"); !errors.Is(err, ErrUnsafeCommand) {
		t.Errorf("DoAll: got %v, want ErrUnsafeCommand", err)
	}
	if got := h.stdin.all(); got != "" {
		t.Errorf("written: got %q, want nothing", got)
	}
}

func TestOverLongLinesSkipped(t *testing.T) {
	h := newHarness(t, Config{MaxLine: 100, MaxReplyLine: 200})
	call := h.c.Go("show-buffer")
	h.feed(t,
		"%output %1 "+strings.Repeat("a", 150), // over MaxLine: skipped
		"%output %1 ok",
		"%begin 1 5 1",
		strings.Repeat("b", 150), // under MaxReplyLine: kept
		strings.Repeat("c", 250), // over: skipped
		"tail",
		"%end 1 5 1",
		"%window-add @"+strings.Repeat("9", 120), // over MaxLine
		"%window-add @2",
	)
	h.end(t)
	if got, want := outcome(call), `reply ["`+strings.Repeat("b", 150)+`" "tail"]`; got != want {
		t.Errorf("reply: got %q, want %q", got, want)
	}
	if got := string(h.output[1]); got != "ok" {
		t.Errorf("output: got %q, want %q", got, "ok")
	}
	if st := h.c.Stats(); st.SkippedLines != 3 {
		t.Errorf("SkippedLines = %d, want 3", st.SkippedLines)
	}
	if ev := h.eventLog(); len(ev) != 1 || ev[0] != "WindowAdd {Window:2}" {
		t.Errorf("events: got %q", ev)
	}
}

func TestCommandsAfterEndFail(t *testing.T) {
	h := newHarness(t, Config{})
	pending := h.c.Go("display -p x")
	h.feed(t, "%exit")
	h.end(t)
	var ee *ExitError
	if <-pending.Done; !errors.As(pending.Err, &ee) {
		t.Errorf("pending: got %v, want *ExitError", pending.Err)
	}
	if _, err := h.c.Do(context.Background(), "display -p y"); !errors.As(err, &ee) {
		t.Errorf("after end: got %v, want *ExitError", err)
	}
	h.c.Close()
	h.c.Close()
	if !errors.As(h.c.Err(), &ee) {
		t.Errorf("Err after Close: got %v, want the first error kept", h.c.Err())
	}
}

// TestOutputPathDoesNotAllocate checks the read goroutine's %output path.
func TestOutputPathDoesNotAllocate(t *testing.T) {
	n := 0
	c := newConn(Config{Session: "s", OnOutput: func(int, []byte, time.Duration) { n++ }}, nil, &sink{})
	lines := [][]byte{
		[]byte(`%output %1 hello \033[1mworld\033[0m\015\012`),
		[]byte(`%extended-output %2 17 : caf\303`),
		[]byte("%extended-output %2 17 : \xa9 ok"),
	}
	allocs := testing.AllocsPerRun(1000, func() {
		for _, l := range lines {
			c.topLine(l)
		}
	})
	if allocs != 0 {
		t.Errorf("output path allocated %v times per 3 lines", allocs)
	}
	if n == 0 {
		t.Error("OnOutput never called")
	}
}

// waitFor polls cond with a generous deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the deadline")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gatedSink is a sink whose first Write blocks until open is closed.
type gatedSink struct {
	sink
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func (s *gatedSink) Write(p []byte) (int, error) {
	s.once.Do(func() {
		close(s.entered)
		<-s.open
	})
	return s.sink.Write(p)
}

// TestConcurrentSendsCombineIntoOneWrite: commands sent while another sender is writing
// are not written one by one behind it: that sender writes them all in its next write,
// in the order they were queued, and every reply still reaches its own command.
func TestConcurrentSendsCombineIntoOneWrite(t *testing.T) {
	st := &gatedSink{entered: make(chan struct{}), open: make(chan struct{})}
	r, w := io.Pipe()
	c := newConn(Config{Session: "s"}, r, st)
	go c.run()
	t.Cleanup(func() { w.Close(); c.Close() })

	firstc := make(chan *Call, 1)
	go func() { firstc <- c.Go("display -p a") }() // this sender writes, and blocks in its write
	<-st.entered
	var calls []*Call
	for _, x := range []string{"b", "c", "d"} {
		calls = append(calls, c.Go("display -p "+x)) // returns at once: queued behind the write
	}
	close(st.open)
	first := <-firstc
	waitFor(t, func() bool { return st.all() == "display -p a\ndisplay -p b\ndisplay -p c\ndisplay -p d\n" })
	st.mu.Lock()
	writes := append([]string(nil), st.writes...)
	st.mu.Unlock()
	if len(writes) != 2 || writes[1] != "display -p b\ndisplay -p c\ndisplay -p d\n" {
		t.Errorf("writes: got %q, want the three queued lines in one write", writes)
	}
	for i, x := range []string{"a", "b", "c", "d"} {
		fmt.Fprintf(w, "%%begin 1 %d 1\n%s\n%%end 1 %d 1\n", i+1, x, i+1)
	}
	for i, call := range append([]*Call{first}, calls...) {
		select {
		case <-call.Done:
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d: no reply", i)
		}
		if want := string(rune('a' + i)); call.Err != nil || len(call.Reply.Lines) != 1 || call.Reply.Lines[0] != want {
			t.Errorf("call %d: %+v %v, want %q", i, call.Reply, call.Err, want)
		}
	}
}
