package controlmode

import (
	"context"
	"time"
)

// Backoff bounds for Keep.
const (
	keepMinBackoff = 100 * time.Millisecond
	keepMaxBackoff = 5 * time.Second
)

// Keep keeps a connection up until ctx ends: it dials, calls onConn with each new Conn
// (on Keep's goroutine; onConn must return promptly and must not Close the Conn), waits
// for it to end, and redials after a backoff that starts at 100ms and doubles to 5s (reset
// once a connection has lived longer than 5s). When ctx ends Keep closes the current
// connection and returns ctx.Err(). Dial errors are logged to cfg.Logger.
func Keep(ctx context.Context, cfg Config, onConn func(*Conn)) error {
	log := cfg.withDefaults().Logger
	backoff := keepMinBackoff
	for {
		c, err := Dial(ctx, cfg)
		if err == nil {
			began := time.Now()
			onConn(c)
			select {
			case <-c.Done():
				log.Warn("control connection ended; reconnecting", "error", c.Err())
			case <-ctx.Done():
				c.Close()
				return ctx.Err()
			}
			if time.Since(began) > keepMaxBackoff {
				backoff = keepMinBackoff
			}
		} else if ctx.Err() == nil {
			log.Warn("dial failed; retrying", "error", err, "backoff", backoff)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, keepMaxBackoff)
	}
}
