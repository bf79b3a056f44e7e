package controlmode

import (
	"context"
	"fmt"
	"strings"
)

// Subscribe asks tmux to report format, expanded for what, whenever its value changes
// (checked once a second), as *SubscriptionChanged events named name. what is "" (the
// attached session), "%N", "%*" (every pane), "@N" or "@*". Reusing a name replaces the
// subscription. name and what must not contain ':'.
func (c *Conn) Subscribe(ctx context.Context, name, what, format string) error {
	if name == "" || strings.Contains(name, ":") || strings.Contains(what, ":") {
		return fmt.Errorf("subscribe %q: name or target holds ':' or is empty", name)
	}
	q, err := Quote(name + ":" + what + ":" + format)
	if err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	if _, err := c.Do(ctx, "refresh-client -B "+q); err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	return nil
}

// Unsubscribe removes the subscription name.
func (c *Conn) Unsubscribe(ctx context.Context, name string) error {
	if name == "" || strings.Contains(name, ":") {
		return fmt.Errorf("unsubscribe %q: name holds ':' or is empty", name)
	}
	q, err := Quote(name)
	if err != nil {
		return fmt.Errorf("unsubscribe %q: %w", name, err)
	}
	if _, err := c.Do(ctx, "refresh-client -B "+q); err != nil {
		return fmt.Errorf("unsubscribe %q: %w", name, err)
	}
	return nil
}
