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
}

type clientList struct {
	conn  *controlmode.Conn // the connection they were listed on: a new one lists again
	at    time.Time
	names []string
}

// get returns the clients attached to session, listing them over conn unless a list of
// the last clientsFresh on the same connection is at hand.
func (c *clientCache) get(ctx context.Context, conn *controlmode.Conn, session string) ([]string, error) {
	now := time.Now()
	c.mu.Lock()
	l, ok := c.byWS[session]
	c.mu.Unlock()
	if ok && l.conn == conn && now.Sub(l.at) < clientsFresh {
		return l.names, nil
	}
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
