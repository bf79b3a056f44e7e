package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/view"
)

// The fleet's cards on the event stream: an /api/v1/events stream a page reads (SSE)
// carries, after each event that changes a runtime's card, an `event: card` frame with
// that card as package view makes it (a runtime that left: {"runtime_id", "gone": true}).
// The page draws the cards it is given and makes no request of its own per event. Each
// stream keeps its own view.Fleet, read at its start with the stream's token.

// maxFrame bounds an event frame kept while it is incomplete.
const maxFrame = 4 << 20

// withCards serves the event stream through next, adding the card frames.
func (s *Server) withCards(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			next.ServeHTTP(w, r)
			return
		}
		f, ok := s.readFleet(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(&cardWriter{ResponseWriter: w, fleet: f}, r)
	})
}

// readFleet is the fleet r's token sees now; false (the answer written) when the API
// refused a read.
func (s *Server) readFleet(w http.ResponseWriter, r *http.Request) (*view.Fleet, bool) {
	var rts []api.Runtime
	var ts []api.Trigger
	if !s.apiGet(w, r, "/v1/runtimes", &rts) || !s.apiGet(w, r, "/v1/triggers?open=1", &ts) {
		return nil, false
	}
	for _, rt := range rts {
		var last []api.Trigger
		if !s.apiGet(w, r, "/v1/triggers?newest=1&limit=1&runtime="+url.QueryEscape(rt.RuntimeID), &last) {
			return nil, false
		}
		ts = append(ts, last...)
	}
	f := view.NewFleet()
	f.Reset(rts, ts)
	return f, true
}

// cardWriter passes an SSE stream through and adds a card frame after each event that
// touches a runtime. The API's handler is its only writer.
type cardWriter struct {
	http.ResponseWriter
	fleet *view.Fleet
	buf   []byte // an incomplete frame
	out   []byte
}

// Unwrap lets http.ResponseController reach the connection (write deadlines).
func (c *cardWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush passes a flush through.
func (c *cardWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *cardWriter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	c.out = append(c.out[:0], p...)
	for {
		i := bytes.Index(c.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		frame := c.buf[:i]
		c.buf = c.buf[i+2:]
		if card := c.card(frame); card != nil {
			c.out = append(c.out, "event: card\ndata: "...)
			c.out = append(c.out, card...)
			c.out = append(c.out, "\n\n"...)
		}
	}
	if len(c.buf) > maxFrame {
		c.buf = c.buf[:0]
	}
	if len(c.buf) == 0 {
		c.buf = c.buf[:0:0] // let a large frame's memory go
	}
	if _, err := c.ResponseWriter.Write(c.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// card applies one frame's event to the fleet and returns the card it changed (JSON),
// nil when none.
func (c *cardWriter) card(frame []byte) []byte {
	var data []byte
	for _, l := range bytes.Split(frame, []byte("\n")) {
		if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			data = d
		}
	}
	if data == nil {
		return nil
	}
	var ev struct {
		Type    string          `json:"type"`
		Runtime json.RawMessage `json:"runtime"`
		Trigger json.RawMessage `json:"trigger"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	id := ""
	switch ev.Type {
	case "runtime":
		var rt api.Runtime
		if json.Unmarshal(ev.Runtime, &rt) != nil || rt.RuntimeID == "" {
			return nil
		}
		c.fleet.PutRuntime(rt)
		id = rt.RuntimeID
	case "trigger":
		var t api.Trigger
		if json.Unmarshal(ev.Trigger, &t) != nil || t.TriggerID == "" {
			return nil
		}
		id = c.fleet.PutTrigger(t)
	case "readiness":
		var d struct {
			RuntimeID    string `json:"runtime_id"`
			Readiness    string `json:"readiness"`
			Summary      string `json:"summary"`
			OperatorBusy bool   `json:"operator_busy"`
		}
		if json.Unmarshal(ev.Detail, &d) != nil || !c.fleet.SetReadiness(d.RuntimeID, nudge.Readiness(d.Readiness), d.Summary, d.OperatorBusy) {
			return nil
		}
		id = d.RuntimeID
	case "reply": // the reply is on the trigger: read it again
		return nil
	default:
		return nil
	}
	card, ok := c.fleet.Card(id)
	var b []byte
	if ok {
		b, _ = json.Marshal(card)
	} else {
		b, _ = json.Marshal(map[string]any{"runtime_id": id, "gone": true})
	}
	return b
}
