package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/nudgehq/nudge"
)

// maxReply bounds an answer read from the daemon.
const maxReply = 64 << 20

// Client talks to a daemon over its unix socket. The token, if any, goes in an
// Authorization: Bearer header; without one the daemon decides from the peer's uid.
type Client struct {
	socket string
	token  string
	http   *http.Client
}

// NewClient returns a client of the daemon listening on socket.
func NewClient(socket, token string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns: 4,
	}
	return &Client{socket: socket, token: token, http: &http.Client{Transport: tr}}
}

// Socket is the daemon socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Do sends a request with body (JSON, if non-nil) and decodes a 2xx answer into out (if
// non-nil). A non-2xx answer is returned as *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.Send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var ae Error
		if json.Unmarshal(data, &ae) == nil && ae.ErrorCode != "" {
			return &ae
		}
		return fmt.Errorf("daemon answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Send sends a request with body (JSON, if non-nil) and returns the answer unread, whatever
// its status: for streams (/v1/events) and bodies that are not JSON (/metrics). The caller
// closes its Body. A daemon that cannot be reached is an *Error that says what to do.
func (c *Client) Send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://nudge"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.explain(err)
	}
	return resp, nil
}

// explain turns a dial failure into an *Error that says what to do.
func (c *Client) explain(err error) error {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return &Error{ErrorCode: nudge.Unavailable, cause: ErrUnreachable,
			Message: fmt.Sprintf("cannot reach the daemon at %s: is `nudge serve` running? (--socket or NUDGE_SOCKET names another)", c.socket)}
	}
	if errors.Is(err, os.ErrPermission) {
		return &Error{ErrorCode: nudge.Forbidden, Message: fmt.Sprintf("cannot connect to %s: permission denied (the daemon's socket is for its own user)", c.socket)}
	}
	return err
}

// Health is GET /v1/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.Do(ctx, "GET", "/v1/health", nil, &h)
}

// Runtimes lists the runtimes the caller may see, of one workspace if workspace is not "".
func (c *Client) Runtimes(ctx context.Context, workspace string) ([]Runtime, error) {
	p := "/v1/runtimes"
	if workspace != "" {
		p += "?workspace=" + url.QueryEscape(workspace)
	}
	out := []Runtime{}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// AllRuntimes is GET /v1/runtimes?all=1: the fleet, then the runtimes dropped from it
// (deregistered, collected) that the store keeps.
func (c *Client) AllRuntimes(ctx context.Context, workspace string) ([]Runtime, error) {
	p := "/v1/runtimes?all=1"
	if workspace != "" {
		p += "&workspace=" + url.QueryEscape(workspace)
	}
	out := []Runtime{}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// Unmanaged is GET /v1/unmanaged: the panes in the workspaces' sessions no runtime
// claims (windows opened there by hand).
func (c *Client) Unmanaged(ctx context.Context, workspace string) ([]Stray, error) {
	p := "/v1/unmanaged"
	if workspace != "" {
		p += "?workspace=" + url.QueryEscape(workspace)
	}
	out := []Stray{}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// Runtime is GET /v1/runtimes/{id}.
func (c *Client) Runtime(ctx context.Context, id string) (Runtime, error) {
	var rt Runtime
	return rt, c.Do(ctx, "GET", "/v1/runtimes/"+url.PathEscape(id), nil, &rt)
}

// Spawn starts a runtime.
func (c *Client) Spawn(ctx context.Context, req SpawnRequest) (Runtime, error) {
	var rt Runtime
	return rt, c.Do(ctx, "POST", "/v1/runtimes", req, &rt)
}

// Stop stops a runtime (C-c, then SIGHUP, SIGTERM, SIGKILL by pid).
func (c *Client) Stop(ctx context.Context, id, reason string) (Runtime, error) {
	return c.runtimeAction(ctx, id, "stop", ReasonRequest{Reason: reason})
}

// Restart runs a runtime's program again.
func (c *Client) Restart(ctx context.Context, id, reason string) (Runtime, error) {
	return c.runtimeAction(ctx, id, "restart", ReasonRequest{Reason: reason})
}

// Pause holds triggers for a runtime until Resume; reason may be "".
func (c *Client) Pause(ctx context.Context, id, reason string) (Runtime, error) {
	return c.runtimeAction(ctx, id, "pause", reasonBody(reason))
}

// Resume lets a paused runtime's triggers go; reason may be "".
func (c *Client) Resume(ctx context.Context, id, reason string) (Runtime, error) {
	return c.runtimeAction(ctx, id, "resume", reasonBody(reason))
}

// reasonBody is the optional body of a runtime action: none without a reason.
func reasonBody(reason string) any {
	if reason == "" {
		return nil
	}
	return ReasonRequest{Reason: reason}
}

func (c *Client) runtimeAction(ctx context.Context, id, action string, body any) (Runtime, error) {
	var rt Runtime
	return rt, c.Do(ctx, "POST", "/v1/runtimes/"+url.PathEscape(id)+"/"+action, body, &rt)
}

// Tail returns a runtime's last lines of output (lines <= 0: the daemon's default).
func (c *Client) Tail(ctx context.Context, id string, lines int) (Tail, error) {
	p := "/v1/runtimes/" + url.PathEscape(id) + "/tail"
	if lines > 0 {
		p += "?lines=" + strconv.Itoa(lines)
	}
	var t Tail
	return t, c.Do(ctx, "GET", p, nil, &t)
}

// Trigger submits a trigger and returns its receipt as accepted.
func (c *Client) Trigger(ctx context.Context, req TriggerRequest) (Trigger, error) {
	var t Trigger
	return t, c.Do(ctx, "POST", "/v1/triggers", req, &t)
}

// GetTrigger returns a trigger's receipt; with wait > 0 the daemon holds the answer until
// the trigger is closed or wait passes.
func (c *Client) GetTrigger(ctx context.Context, id string, wait time.Duration) (Trigger, error) {
	return c.getTrigger(ctx, id, wait, WaitClosed)
}

// getTrigger is GET /v1/triggers/{id}, held by the daemon up to wait until the receipt
// is closed (w: WaitReply, until its reply is on it or it failed).
func (c *Client) getTrigger(ctx context.Context, id string, wait time.Duration, w WaitFor) (Trigger, error) {
	p := "/v1/triggers/" + url.PathEscape(id)
	if wait > 0 {
		p += "?wait=" + wait.String()
		if w == WaitReply {
			p += "&for=reply"
		}
	}
	var t Trigger
	return t, c.Do(ctx, "GET", p, nil, &t)
}

// Ack acknowledges a trigger.
func (c *Client) Ack(ctx context.Context, id string) (Trigger, error) {
	var t Trigger
	return t, c.Do(ctx, "POST", "/v1/triggers/"+url.PathEscape(id)+"/ack", nil, &t)
}

// WaitTrigger follows a receipt until it reaches w, is closed, or wait passes, and returns
// the latest receipt and whether it reached w. seen, if not nil, is shown each receipt read.
func (c *Client) WaitTrigger(ctx context.Context, id string, w WaitFor, wait time.Duration, seen func(Trigger)) (Trigger, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	poll := 20 * time.Millisecond
	for {
		hold := time.Duration(0)
		if w == WaitClosed || w == WaitAcked || w == WaitReply {
			// The daemon holds the answer until the trigger closes: no polling needed.
			// It answers a little before our deadline so the answer is not cut off.
			if dl, ok := ctx.Deadline(); ok {
				hold = (time.Until(dl) - 250*time.Millisecond).Truncate(time.Millisecond)
			}
		}
		t, err := c.getTrigger(ctx, id, hold, w)
		if err != nil {
			if ctx.Err() != nil && t.TriggerID == "" {
				last, lcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer lcancel()
				t, err = c.GetTrigger(last, id, 0)
				return t, w.ReachedBy(t), err
			}
			return t, false, err
		}
		if seen != nil {
			seen(t)
		}
		if w.ReachedBy(t) || w.Over(t) {
			return t, w.ReachedBy(t), nil
		}
		select {
		case <-ctx.Done():
			return t, false, nil
		case <-time.After(poll):
		}
		poll = min(2*poll, 250*time.Millisecond)
	}
}

// Triggers lists receipts the caller may see.
func (c *Client) Triggers(ctx context.Context, f TriggerFilter) ([]Trigger, error) {
	q := url.Values{}
	for k, v := range map[string]string{"workspace": f.Workspace, "agent": f.Agent, "runtime": f.RuntimeID, "thread": f.ThreadID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.OpenOnly {
		q.Set("open", "1")
	}
	if f.Newest {
		q.Set("newest", "1")
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	p := "/v1/triggers"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	out := []Trigger{}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// Audit returns the audit records of one trigger ("" for all the caller may see).
func (c *Client) Audit(ctx context.Context, triggerID string) ([]AuditRecord, error) {
	p := "/v1/audit"
	if triggerID != "" {
		p += "?trigger=" + url.QueryEscape(triggerID)
	}
	out := []AuditRecord{}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// Schedules lists the periodic prompts the caller may see.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	out := []Schedule{}
	return out, c.Do(ctx, "GET", "/v1/schedules", nil, &out)
}

// AddSchedule adds a periodic prompt.
func (c *Client) AddSchedule(ctx context.Context, req ScheduleRequest) (Schedule, error) {
	var s Schedule
	return s, c.Do(ctx, "POST", "/v1/schedules", req, &s)
}
