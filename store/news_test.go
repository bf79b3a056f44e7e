package store

import (
	"testing"

	"github.com/nudgehq/nudge"
)

// testNews is a bus with one subscriber, for what a store reports on it.
type testNews struct {
	b *nudge.Bus
	c *nudge.Client
}

type drained chan struct{}

func newTestNews(t *testing.T) *testNews {
	n := &testNews{b: nudge.NewBus()}
	n.c = nudge.NewClient(n.b, "test", 16)
	nudge.Subscribe(n.c, func(d drained) { close(d) })
	t.Cleanup(n.b.Close) // registered before the store's: runs after its Close
	return n
}

// on runs fn for every T the store publishes.
func on[T any](n *testNews, fn func(T)) { nudge.Subscribe(n.c, fn) }

// drain returns once every event published before it has been handled.
func (n *testNews) drain() {
	d := make(drained)
	nudge.Publish(n.b, d)
	<-d
}
