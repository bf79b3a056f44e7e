package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// replyScript is the model of a run. With no delay and the marker it is
// standin.Scripted: an immediate reply that prints each envelope's ack marker. Otherwise
// every turn answers "Answer to <ids>." after delay, with the markers only if marker is
// set: without them a receipt can rest only on the agent's own record.
func replyScript(delay time.Duration, marker bool) standin.Script {
	if delay == 0 && marker {
		return standin.Scripted(nil)
	}
	return func(req standin.Request) standin.Reply {
		if req.Side {
			return standin.Reply{Text: "Stand-in session"}
		}
		text := "Answer to " + strings.Join(standin.EnvelopeIDs(req.Prompt), ", ") + "."
		if a := standin.AckLines(req.Prompt); marker && a != "" {
			text += "\n\n" + a
		}
		r := standin.Reply{Text: text}
		if !req.ToolResult {
			r.Delay = delay
		}
		return r
	}
}

// sent is one trigger of a run and its final receipt.
type sent struct {
	id, kind string
	tr       trigger
}

// measure sends the triggers and prints the figures. With no interval each trigger is
// waited for until acked before the next; with one, the next is sent interval after the
// previous was accepted, whatever its state (an agent still in its turn queues it).
func (r *run) measure(srv *standin.Server) error {
	// 63 KiB on one line too: Gemini CLI takes it in silently for seconds after Enter.
	prompts := append(standin.Prompts(63), standin.Prompt{Kind: "63KiB", Body: standin.Filler(63<<10, false)})
	var all []*sent
	var answered []time.Duration // POST /v1/triggers → its answer
	first := time.Now()
	for i := range r.n {
		p := prompts[i%len(prompts)]
		s := &sent{id: fmt.Sprintf("%s-%03d-%s", r.agent, i, p.Kind), kind: p.Kind}
		all = append(all, s)
		t := time.Now()
		if err := r.call("POST", "/v1/triggers", map[string]any{"trigger_id": s.id, "workspace": "turns", "agent": "dev", "prompt": p.Body}, nil); err != nil {
			return err
		}
		answered = append(answered, time.Since(t))
		if i == r.n-1 {
			r.span = time.Since(first)
		}
		if r.interval > 0 {
			time.Sleep(r.interval)
			continue
		}
		r.wait(s, time.Now().Add(r.timeout), false)
	}
	// Every receipt until acked or closed, then its turn's end for a while (a daemon
	// that does not report turn_ended_at leaves it empty).
	deadline := time.Now().Add(r.timeout)
	for _, s := range all {
		r.wait(s, deadline, false)
	}
	deadline = time.Now().Add(r.replyDelay + 10*time.Second)
	for _, s := range all {
		if s.tr.State == "acked" {
			r.wait(s, deadline, true)
		}
	}
	time.Sleep(2 * time.Second) // a late duplicate would arrive now
	r.answered = answered
	r.report(all, prompts, srv.Requests())
	return nil
}

// wait polls s's receipt until it is acked or closed (and, with turnEnd, until its turn
// ended) or until deadline.
func (r *run) wait(s *sent, deadline time.Time, turnEnd bool) {
	for {
		var tr trigger
		if err := r.call("GET", "/v1/triggers/"+s.id, nil, &tr); err == nil {
			s.tr = tr
			done := tr.State == "acked" || tr.Closed
			if turnEnd {
				done = tr.TurnEndedAt != nil || tr.State != "acked"
			}
			if done {
				return
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstSeen returns when the model first got a call whose conversation holds the
// envelope id (side calls aside), or false.
func firstSeen(reqs []standin.Request, id string) (time.Time, bool) {
	for _, q := range reqs {
		if q.Side {
			continue
		}
		for _, h := range q.History {
			if slices.Contains(standin.EnvelopeIDs(h), id) {
				return q.At, true
			}
		}
	}
	return time.Time{}, false
}

// report prints the run's figures and the story of every trigger that failed or reached
// the model other than once.
func (r *run) report(all []*sent, prompts []standin.Prompt, reqs []standin.Request) {
	t := newTally()
	for _, s := range all {
		r.printStory(s, t.add(s, reqs))
	}
	r.printSummary(len(all), reqs, t)
	t.printKinds(prompts)
}

// printStory prints s's audit story if it went wrong (bad says how), or with -stories.
func (r *run) printStory(s *sent, bad string) {
	tr := s.tr
	switch {
	case bad != "":
		fmt.Printf("%s: %s %s, %s; its story:%s\n", s.id, tr.State, tr.ErrorCode, bad, r.story(s.id))
	case r.stories:
		fmt.Printf("%s: %s %s; its story:%s\n", s.id, tr.State, tr.AckSignal, r.story(s.id))
	}
}

// printSummary prints how the run sent its sent triggers, their outcomes and the
// latencies from acceptance to each step.
func (r *run) printSummary(sent int, reqs []standin.Request, t *tally) {
	mode := "one after the other, each waited for until acked"
	if r.interval > 0 {
		mode = fmt.Sprintf("every %v", r.interval)
	}
	fmt.Printf("%s: %d triggers %s, replies after %v, marker %v; sent over %v, POST answered p50 %v p95 %v\n",
		r.label(), sent, mode, r.replyDelay, r.marker, r.span.Round(time.Millisecond), pct(r.answered, 50), pct(r.answered, 95))
	fmt.Printf("  submitted %d  acked %d (%s)  backend %s  replied %d (reply holds its id: %d)  model got %d prompts other than once\n",
		t.submitted, t.acked, counts(t.signals), counts(t.backends), t.replied, t.replyHolds, t.notOnce)
	calls := 0
	for _, q := range reqs {
		if !q.Side {
			calls++
		}
	}
	fmt.Printf("  accepted → model request  p50 %v p95 %v  (%d seen; %d model calls in all)\n", pct(t.toModel, 50), pct(t.toModel, 95), len(t.toModel), calls)
	fmt.Printf("  accepted → submitted      p50 %v p95 %v\n", pct(t.toSubmit, 50), pct(t.toSubmit, 95))
	fmt.Printf("  accepted → acked          p50 %v p95 %v\n", pct(t.toAck, 50), pct(t.toAck, 95))
	if len(t.toEnd) > 0 {
		fmt.Printf("  accepted → turn ended     p50 %v p95 %v\n", pct(t.toEnd, 50), pct(t.toEnd, 95))
	}
}

// counts formats a tally as "a 3, b 1" (most first), "-" when empty.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var b []string
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		b = append(b, fmt.Sprintf("%s %d", name, m[k]))
	}
	return strings.Join(b, ", ")
}

// story is the trigger's audit records, one a line, with times from the first.
func (r *run) story(id string) string {
	var recs []struct {
		Time   time.Time       `json:"time"`
		Event  string          `json:"event"`
		Code   string          `json:"error_code"`
		Reason string          `json:"reason"`
		Detail json.RawMessage `json:"detail"`
	}
	if err := r.call("GET", "/v1/audit?trigger="+id, nil, &recs); err != nil {
		return " " + err.Error()
	}
	var b strings.Builder
	for _, a := range recs {
		fmt.Fprintf(&b, "\n    +%6.3fs %s", a.Time.Sub(recs[0].Time).Seconds(), a.Event)
		if a.Code != "" {
			fmt.Fprintf(&b, " [%s]", a.Code)
		}
		if a.Reason != "" {
			fmt.Fprintf(&b, " reason=%q", a.Reason)
		}
		var d bytes.Buffer
		if json.Compact(&d, a.Detail) == nil && d.Len() > 0 {
			fmt.Fprintf(&b, " %.300s", d.Bytes())
		}
	}
	return b.String()
}
