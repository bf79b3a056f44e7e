package notify

import (
	"context"
	"sync"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// clientsFresh is how long a session's list of attached clients is reused: a busy fleet's
// READY notifications (tens a second) cost one list-clients a second per workspace, not one
// each. A client that attached within it may miss a message.
const clientsFresh = time.Second

// clientCache remembers the ordinary clients attached to each session for clientsFresh.
// Safe for concurrent use.
type clientCache struct {
	mu   sync.Mutex
	byWS map[string]clientList // by session
	now  func() time.Time      // nil: time.Now (tests set a clock before the first use)
}

func (c *clientCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

type clientList struct {
	conn  *controlmode.Conn // the connection they were listed on: a new one lists again
	at    time.Time
	names []string
}

// fresh returns the clients attached to session as listed over conn within the last
// clientsFresh, and whether there is such a list.
func (c *clientCache) fresh(conn *controlmode.Conn, session string) ([]string, bool) {
	c.mu.Lock()
	l, ok := c.byWS[session]
	c.mu.Unlock()
	if !ok || l.conn != conn || c.clock().Sub(l.at) >= clientsFresh {
		return nil, false
	}
	return l.names, true
}

// get returns the clients attached to session, listing them over conn unless a list of
// the last clientsFresh on the same connection is at hand.
func (c *clientCache) get(ctx context.Context, conn *controlmode.Conn, session string) ([]string, error) {
	if names, ok := c.fresh(conn, session); ok {
		return names, nil
	}
	now := c.clock()
	names, err := listClients(ctx, conn, session)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.byWS == nil {
		c.byWS = map[string]clientList{}
	}
	c.byWS[session] = clientList{conn: conn, at: now, names: names}
	c.mu.Unlock()
	return names, nil
}
