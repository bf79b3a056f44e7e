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
	type kindStat struct{ sent, submitted, acked, replied int }
	kinds := map[string]*kindStat{}
	signals, backends := map[string]int{}, map[string]int{}
	var submitted, acked, replied, replyHolds, notOnce int
	var toModel, toSubmit, toAck, toEnd []time.Duration
	for _, s := range all {
		st := kinds[s.kind]
		if st == nil {
			st = &kindStat{}
			kinds[s.kind] = st
		}
		st.sent++
		tr := s.tr
		bad := ""
		if at, ok := firstSeen(reqs, s.id); ok {
			toModel = append(toModel, at.Sub(tr.CreatedAt))
		}
		if n := standin.Count(reqs, s.id); n != 1 {
			notOnce++
			bad = fmt.Sprintf("the model got the prompt %d times", n)
		}
		if tr.SubmittedAt != nil {
			submitted++
			st.submitted++
			toSubmit = append(toSubmit, tr.SubmittedAt.Sub(tr.CreatedAt))
		}
		if tr.DeliveryBackend != "" {
			backends[tr.DeliveryBackend]++
		}
		if tr.State == "acked" && tr.AckedAt != nil {
			acked++
			st.acked++
			signals[tr.AckSignal]++
			toAck = append(toAck, tr.AckedAt.Sub(tr.CreatedAt))
		} else if bad == "" {
			bad = "not acked"
		}
		if tr.TurnEndedAt != nil {
			replied++
			st.replied++
			toEnd = append(toEnd, tr.TurnEndedAt.Sub(tr.CreatedAt))
			if strings.Contains(tr.Reply, s.id) {
				replyHolds++
			}
		}
		if bad == "" && r.stories {
			fmt.Printf("%s: %s %s; its story:%s\n", s.id, tr.State, tr.AckSignal, r.story(s.id))
		} else if bad != "" {
			fmt.Printf("%s: %s %s, %s; its story:%s\n", s.id, tr.State, tr.ErrorCode, bad, r.story(s.id))
		}
	}
	mode := "one after the other, each waited for until acked"
	if r.interval > 0 {
		mode = fmt.Sprintf("every %v", r.interval)
	}
	fmt.Printf("%s: %d triggers %s, replies after %v, marker %v; sent over %v, POST answered p50 %v p95 %v\n",
		r.agent, len(all), mode, r.replyDelay, r.marker, r.span.Round(time.Millisecond), pct(r.answered, 50), pct(r.answered, 95))
	fmt.Printf("  submitted %d  acked %d (%s)  backend %s  replied %d (reply holds its id: %d)  model got %d prompts other than once\n",
		submitted, acked, counts(signals), counts(backends), replied, replyHolds, notOnce)
	calls := 0
	for _, q := range reqs {
		if !q.Side {
			calls++
		}
	}
	fmt.Printf("  accepted → model request  p50 %v p95 %v  (%d seen; %d model calls in all)\n", pct(toModel, 50), pct(toModel, 95), len(toModel), calls)
	fmt.Printf("  accepted → submitted      p50 %v p95 %v\n", pct(toSubmit, 50), pct(toSubmit, 95))
	fmt.Printf("  accepted → acked          p50 %v p95 %v\n", pct(toAck, 50), pct(toAck, 95))
	if len(toEnd) > 0 {
		fmt.Printf("  accepted → turn ended     p50 %v p95 %v\n", pct(toEnd, 50), pct(toEnd, 95))
	}
	for _, p := range prompts {
		if st := kinds[p.Kind]; st != nil {
			fmt.Printf("  %-12s sent %2d  submitted %2d  acked %2d  replied %2d\n", p.Kind, st.sent, st.submitted, st.acked, st.replied)
		}
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
