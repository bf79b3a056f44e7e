package api

import (
	"context"
	"net/url"
)

// ThreadHeadRequest is POST /v1/threads/{id}/head: the thread's newest message for an
// agent is Head. Until the agent's read cursor (its heartbeats' cursor) equals it, the
// thread is unread for that agent, and the daemon's unread wake policy (serve
// --wake-unread) prompts it once the lag is old enough. Head is an id
// ([A-Za-z0-9_.:@/-]{1,128}).
type ThreadHeadRequest struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Head      string `json:"head"`
}

// ThreadHead is the answer to a thread head: the runtime it was kept for, and the
// agent's read cursor then.
type ThreadHead struct {
	ThreadID  string `json:"thread_id"`
	RuntimeID string `json:"runtime_id"`
	Head      string `json:"head"`
	Cursor    string `json:"cursor"`
	Unread    bool   `json:"unread"`
}

// ThreadHead reports a thread's newest message for an agent.
func (c *Client) ThreadHead(ctx context.Context, thread string, req ThreadHeadRequest) (ThreadHead, error) {
	var h ThreadHead
	return h, c.Do(ctx, "POST", "/v1/threads/"+url.PathEscape(thread)+"/head", req, &h)
}
