package api

import (
	"context"
	"time"
)

// WebPairRequest is POST /v1/web/pair (admin): a one-time link that pairs one browser
// with the web view (nudge web pair). Name becomes the device token's subject web:NAME;
// Scope is read, answer, trigger, operate or type; Workspaces nil means the caller's own (all
// for an unrestricted caller); TTL is the device token's lifetime (a Go duration; "" is
// 30 days).
type WebPairRequest struct {
	Name       string   `json:"name,omitempty"`
	Scope      string   `json:"scope,omitempty"`
	Workspaces []string `json:"workspaces,omitempty"`
	TTL        string   `json:"ttl,omitempty"`
}

// WebPairing is the answer: the link (its code is in the fragment, which a browser never
// sends to a server) and what the device token it gives will hold. The link works once,
// until ExpiresAt.
type WebPairing struct {
	URL        string    `json:"url"`
	ExpiresAt  time.Time `json:"expires_at"`
	Subject    string    `json:"subject"`
	Scope      string    `json:"scope"`
	Verbs      []string  `json:"verbs"`
	Workspaces []string  `json:"workspaces"`
	TTL        string    `json:"ttl"`
}

// WebPair asks the daemon for a pairing link of its web view.
func (c *Client) WebPair(ctx context.Context, req WebPairRequest) (WebPairing, error) {
	var p WebPairing
	return p, c.Do(ctx, "POST", "/v1/web/pair", req, &p)
}
