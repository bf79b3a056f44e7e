package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
)

// Alert is the detail of an "alert" event: a threshold the daemon's health checks crossed
// (observe raises them).
type Alert struct {
	Kind      string    `json:"kind"` // timeout_ratio, fallback_spike, stale_heartbeat
	Message   string    `json:"message"`
	RuntimeID string    `json:"runtime_id,omitempty"`
	Value     float64   `json:"value,omitempty"`
	Threshold float64   `json:"threshold,omitempty"`
	Time      time.Time `json:"time"`
}

// Event is one event of GET /v1/events (one NDJSON line).
type Event struct {
	Seq       uint64          `json:"seq"`
	Time      time.Time       `json:"time"`
	Type      string          `json:"type"` // runtime, trigger, readiness, fallback, alert
	Workspace string          `json:"workspace,omitempty"`
	Runtime   *Runtime        `json:"runtime,omitempty"`
	Trigger   *Trigger        `json:"trigger,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`

	// Raw is the event's line as the daemon sent it (without the newline), set by
	// Client.Events; valid only during the callback.
	Raw []byte `json:"-"`
}

// EventsOptions says which events Events reads.
type EventsOptions struct {
	// Since replays the kept events after this sequence number (0: all kept). A number
	// older than the kept window fails with an *Error whose code is EVENTS_EXPIRED.
	Since uint64
	// Live skips the replay: only events from now on (implies Follow).
	Live bool
	// Follow keeps reading after the replay until ctx ends. A stream the daemon ends
	// (the reader fell behind, or the daemon restarted) is resumed from the last event
	// read, so nothing is missed or repeated.
	Follow bool
}

// Events reads /v1/events and calls fn with each event in order; an error from fn ends
// it and is returned. Without Follow it returns nil after the replay. With Follow it
// returns ctx's error when ctx ends, or the error that stopped it from resuming.
func (c *Client) Events(ctx context.Context, o EventsOptions, fn func(Event) error) error {
	since, replay := o.Since, !o.Live
	follow := o.Follow || o.Live
	failures := 0
	for {
		last, got, err := c.eventStream(ctx, since, replay, follow, fn)
		if got {
			since, replay, failures = last, true, 0
		}
		var cb callbackError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &cb):
			return cb.err
		case !follow && err == nil:
			return nil
		case err != nil && (!retryable(err) || failures >= maxResumeFailures):
			return err
		case err != nil:
			failures++
		}
		// The stream ended or the daemon is restarting: resume after the last event.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(failures)*250*time.Millisecond, 2*time.Second)):
		}
	}
}

// maxResumeFailures is how many failed reconnections in a row end a followed stream
// (about half a minute: a daemon restart takes seconds).
const maxResumeFailures = 20

// retryable reports whether a followed stream should try again after err: the daemon is
// away (restarting) or the connection broke, but not an answer it gave (EVENTS_EXPIRED,
// FORBIDDEN, ...).
func retryable(err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.ErrorCode == nudge.Unavailable
	}
	return true
}

// callbackError carries fn's error out of eventStream.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// eventStream reads one /v1/events response. It returns the last seq read and whether
// any event was read.
func (c *Client) eventStream(ctx context.Context, since uint64, replay, follow bool, fn func(Event) error) (last uint64, got bool, err error) {
	q := url.Values{}
	if replay {
		q.Set("since", strconv.FormatUint(since, 10))
	}
	if !follow {
		q.Set("follow", "0")
	}
	p := "/v1/events"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://nudge"+p, nil)
	if err != nil {
		return 0, false, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, false, c.explain(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var ae Error
		if json.Unmarshal(data, &ae) == nil && ae.ErrorCode != "" {
			return 0, false, &ae
		}
		return 0, false, fmt.Errorf("daemon answered %s", resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var ev Event
			if err := json.Unmarshal(line, &ev); err != nil {
				return last, got, fmt.Errorf("decode event: %w", err)
			}
			ev.Raw = line[:len(line)-1]
			if err := fn(ev); err != nil {
				return last, got, callbackError{err}
			}
			last, got = ev.Seq, true
		}
		if rerr == io.EOF {
			return last, got, nil
		}
		if rerr != nil {
			return last, got, rerr
		}
	}
}
