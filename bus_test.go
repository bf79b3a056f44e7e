package nudge_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/nudgehq/nudge"
)

type ping struct{ n int }
type pong struct{ n int }

func TestBusOrderAcrossTypes(t *testing.T) {
	b := nudge.NewBus()
	defer b.Close()
	c := nudge.NewClient(b, "test", 4)
	var mu sync.Mutex
	var got []string
	nudge.Subscribe(c, func(p ping) { mu.Lock(); got = append(got, fmt.Sprint("ping", p.n)); mu.Unlock() })
	nudge.Subscribe(c, func(p pong) { mu.Lock(); got = append(got, fmt.Sprint("pong", p.n)); mu.Unlock() })
	for i := range 3 {
		nudge.Publish(b, ping{i})
		nudge.Publish(b, pong{i})
	}
	c.Close()
	want := "[ping0 pong0 ping1 pong1 ping2 pong2]"
	if s := fmt.Sprint(got); s != want {
		t.Fatalf("got %s, want %s", s, want)
	}
}

// A stalled subscriber neither blocks the publisher nor loses an event: its queue grows
// past queueLen (counted as overflow) and is drained on Close.
func TestBusSlowSubscriberLossless(t *testing.T) {
	b := nudge.NewBus()
	c := nudge.NewClient(b, "slow", 2)
	release := make(chan struct{})
	var n int
	nudge.Subscribe(c, func(p ping) {
		<-release
		n++
	})
	const events = 1000
	for i := range events {
		nudge.Publish(b, ping{i}) // never blocks although the handler does
	}
	if s := c.Stats(); s.Overflow == 0 {
		t.Errorf("overflow = 0 with %d events on a queue of 2", events)
	}
	close(release)
	b.Close()
	if n != events {
		t.Fatalf("delivered %d, want %d", n, events)
	}
}

func TestBusSubscribeLatest(t *testing.T) {
	b := nudge.NewBus()
	c := nudge.NewClient(b, "latest", 4)
	release := make(chan struct{})
	var got []int
	nudge.Subscribe(c, func(pong) { <-release })
	nudge.SubscribeLatest(c, func(p ping) string { return fmt.Sprint(p.n % 2) }, func(p ping) { got = append(got, p.n) })
	nudge.Publish(b, pong{}) // holds the goroutine
	for i := range 10 {
		nudge.Publish(b, ping{i})
	}
	close(release)
	c.Close()
	if fmt.Sprint(got) != "[8 9]" {
		t.Fatalf("got %v, want [8 9]", got)
	}
	b.Close()
}

func TestBusNilAndClosed(t *testing.T) {
	var nb *nudge.Bus
	nudge.Publish(nb, ping{}) // no-op
	nb.Output("rt", nil)
	c := nudge.NewClient(nb, "nil", 1)
	nudge.Subscribe(c, func(ping) { t.Error("event on a nil bus") })
	c.Close()

	b := nudge.NewBus()
	b.Close()
	c = nudge.NewClient(b, "late", 1)
	nudge.Subscribe(c, func(ping) { t.Error("event after Close") })
	nudge.Publish(b, ping{})
	c.Close()
	b.Close() // idempotent
}

type reader struct{ n *int }

func (r reader) PaneOutput(string, []byte) { *r.n++ }

func TestBusOutput(t *testing.T) {
	b := nudge.NewBus()
	var x, y int
	stopX := b.ReadOutput(reader{&x})
	stopY := b.ReadOutput(reader{&y})
	b.Output("rt", []byte("a"))
	stopX()
	stopX()
	b.Output("rt", []byte("b"))
	stopY()
	b.Output("rt", []byte("c"))
	if x != 1 || y != 2 {
		t.Fatalf("x, y = %d, %d, want 1, 2", x, y)
	}
	data := []byte("d")
	if a := testing.AllocsPerRun(100, func() { b.Output("rt", data) }); a != 0 {
		t.Errorf("Output allocates %v times", a)
	}
}
