package events

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// ExpiredError says that a reader asked to resume from a sequence number whose
// successors are no longer all kept (or that the log never reached). It is answered
// before the stream starts, as HTTP 410 Gone with error_code EVENTS_EXPIRED: like a
// Kubernetes watch's "resource version too old", the client re-reads the state it needs
// and resumes from Resume.
type ExpiredError struct {
	Since   uint64 // what the reader asked for
	Trimmed uint64 // events up to here are gone (0 when Since was ahead of the log)
	// Lost: events up to here may be missing because they could not be written (the
	// store could not write, or the daemon stopped before it wrote them). 0 if none.
	Lost uint64
	Last uint64 // the newest event
}

func (e *ExpiredError) Error() string {
	if e.Since > e.Last {
		return fmt.Sprintf("no event %d: the newest is %d (the event log was reset?): re-read the state you need and resume with since=%d",
			e.Since, e.Last, e.Last)
	}
	if e.Lost > e.Trimmed {
		return fmt.Sprintf("events after %d are not all kept: some up to %d could not be written (the store could not write, or the daemon stopped before it did); re-read the state you need and resume with since=%d",
			e.Since, e.Lost, e.Lost)
	}
	return fmt.Sprintf("events after %d are no longer kept: %d to %d were dropped from the window; re-read the state you need and resume with since=%d",
		e.Since, e.Since+1, e.Trimmed, e.Trimmed)
}

// Unwrap gives the error in the API's terms: a *nudge.Error with code EVENTS_EXPIRED.
func (e *ExpiredError) Unwrap() error {
	return nudge.NewError(nudge.EventsExpired, e.Error())
}

// Resume is the since value to resume from.
func (e *ExpiredError) Resume() uint64 {
	if e.Since > e.Last {
		return e.Last
	}
	return max(e.Trimmed, e.Lost)
}

// Replay subscribes and returns the events after since (oldest first) and the subscriber
// that follows on from them: the backlog and the feed neither overlap nor leave a gap.
// Backlog events carry Seq, Time, Type, Workspace and their JSON, not the records they were
// made of (Runtime, Trigger, Detail are nil: decode JSON() for those). It
// fails with an *ExpiredError if events after since are no longer kept, or may be
// missing because they could not be written; with a *nudge.Error (UNAVAILABLE) while
// events are being dropped unnumbered (see Publish). since 0 means everything kept
// (never expired).
func (h *Hub) Replay(since uint64) ([]Event, *Subscriber, error) {
	h.mu.Lock()
	last, lost := h.seq, h.w.lost
	switch {
	case since > last:
		h.mu.Unlock()
		return nil, nil, &ExpiredError{Since: since, Last: last}
	case h.w.unnumbered > 0:
		h.mu.Unlock()
		return nil, nil, nudge.NewError(nudge.Unavailable, "events cannot be numbered now: the store cannot write; retry")
	case since > 0 && since < lost:
		h.mu.Unlock()
		return nil, nil, &ExpiredError{Since: since, Lost: lost, Last: last}
	}
	s := h.subscribeLocked()
	recent, complete := h.recentAfter(since)
	var unwritten []Event
	if !complete {
		unwritten = h.unwrittenAfter(since)
	}
	h.mu.Unlock()
	if complete {
		return recent, s, nil
	}
	// Older than memory: read the store. An event numbered before the subscription is
	// there or (taken above, before the read) still in memory: it leaves memory only
	// once it is committed.
	stored, trimmed, err := h.log.EventsSince(since, 0)
	if err != nil {
		h.Unsubscribe(s)
		return nil, nil, fmt.Errorf("replay events: %w", err)
	}
	if since > 0 && since < trimmed {
		h.Unsubscribe(s)
		return nil, nil, &ExpiredError{Since: since, Trimmed: trimmed, Lost: lost, Last: last}
	}
	out := make([]Event, 0, len(stored)+len(unwritten)+len(recent))
	for _, se := range stored {
		if se.Seq > last {
			break // numbered after the subscription: it follows on s
		}
		out = append(out, decodeStored(se.Seq, se.Time, se.Data))
	}
	out = append(append(out, unwritten...), recent...)
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return slices.CompactFunc(out, func(a, b Event) bool { return a.Seq == b.Seq }), s, nil
}

// decodeStored makes an Event of a stored one: enough to filter it (Type, Workspace) and
// its JSON as it was published.
func decodeStored(seq uint64, at time.Time, data []byte) Event {
	var head struct {
		Type      string `json:"type"`
		Workspace string `json:"workspace"`
	}
	_ = json.Unmarshal(data, &head)
	return Event{Seq: seq, Time: at, Type: head.Type, Workspace: head.Workspace, raw: data}
}

// eventWriteTimeout cuts off a client that stops reading.
const eventWriteTimeout = 10 * time.Second

// Position reads where a request resumes: the Last-Event-ID header (what an SSE client
// sends when it reconnects) wins over ?since=. ok is false when neither is given (a live
// stream only).
func Position(r *http.Request) (since uint64, ok bool, err error) {
	v, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("since"), "since"
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false, nudge.NewError(nudge.BadRequest, fmt.Sprintf("%s %q: not a sequence number", name, v))
	}
	return n, true, nil
}

// WantsSSE reports whether the request asks for server-sent events.
func WantsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// Serve is GET /v1/events: it replays the events after the request's position (if any),
// then follows, writing only those show passes (the caller's scope). NDJSON by default
// (one Event per line); server-sent events (`id:` and `data:` lines) when the request
// accepts text/event-stream. It returns an error, with nothing written, if the stream
// cannot start (a bad position: *nudge.Error; an expired one: *ExpiredError); the caller
// writes it. With ?follow=0 the stream ends after the replay. Otherwise it ends when the
// client goes away, the subscriber falls behind (the client resumes from the last seq it
// got), events are dropped unnumbered (see Publish: the resume answers UNAVAILABLE, then
// EVENTS_EXPIRED) or the Hub closes.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, show func(Event) bool) error {
	fl, ok := w.(http.Flusher)
	if !ok {
		return nudge.NewError(nudge.BadRequest, "streaming unsupported")
	}
	since, replay, err := Position(r)
	if err != nil {
		return err
	}
	var backlog []Event
	var s *Subscriber
	if replay {
		if backlog, s, err = h.Replay(since); err != nil {
			return err
		}
	} else {
		s = h.Subscribe()
	}
	defer h.Unsubscribe(s)
	sse := WantsSSE(r)
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	sw := &streamWriter{w: w, fl: fl, rc: http.NewResponseController(w), sse: sse, show: show}
	for _, ev := range backlog {
		if !sw.write(ev) {
			return nil
		}
	}
	sw.flush()
	if f := r.URL.Query().Get("follow"); f == "0" || f == "false" {
		return nil // the replay only
	}
	sw.follow(r, s)
	return nil
}

type streamWriter struct {
	w    http.ResponseWriter
	fl   http.Flusher
	rc   *http.ResponseController
	sse  bool
	show func(Event) bool
	buf  []byte
}

// write writes ev if show passes it; false when the client is gone.
func (sw *streamWriter) write(ev Event) bool {
	if !sw.show(ev) {
		return true
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
	b := sw.buf[:0]
	if sw.sse {
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, ev.Seq, 10)
		b = append(b, "\ndata: "...)
		b = append(b, ev.raw...)
		b = append(b, "\n\n"...)
	} else {
		b = append(b, ev.raw...)
		b = append(b, '\n')
	}
	sw.buf = b
	_, err := sw.w.Write(b)
	return err == nil
}

func (sw *streamWriter) flush() {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
	sw.fl.Flush()
}

// follow writes s's events until the request ends, s is dropped or the client is gone.
func (sw *streamWriter) follow(r *http.Request, s *Subscriber) {
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.Dropped:
			// Drain what was buffered, then end the stream.
			for {
				select {
				case ev := <-s.C:
					if !sw.write(ev) {
						return
					}
				default:
					sw.flush()
					return
				}
			}
		case ev := <-s.C:
			if !sw.write(ev) {
				return
			}
			if len(s.C) == 0 {
				sw.flush()
			}
		}
	}
}
