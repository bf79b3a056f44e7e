package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// tally counts a run's triggers by outcome, in all and per prompt kind, and collects
// their latencies from acceptance.
type tally struct {
	kinds                                          map[string]*kindStat
	signals, backends                              map[string]int // acked by which signal; delivered by which backend
	submitted, acked, replied, replyHolds, notOnce int
	toModel, toSubmit, toAck, toEnd                []time.Duration // accepted → model request, submitted, acked, turn ended
}

// kindStat is one prompt kind's outcomes.
type kindStat struct{ sent, submitted, acked, replied int }

func newTally() *tally {
	return &tally{kinds: map[string]*kindStat{}, signals: map[string]int{}, backends: map[string]int{}}
}

// add counts s, whose conversation with the model is in reqs, and returns what went
// wrong with it ("" if nothing).
func (t *tally) add(s *sent, reqs []standin.Request) (bad string) {
	st := t.kinds[s.kind]
	if st == nil {
		st = &kindStat{}
		t.kinds[s.kind] = st
	}
	st.sent++
	tr := s.tr
	if at, ok := firstSeen(reqs, s.id); ok {
		t.toModel = append(t.toModel, at.Sub(tr.CreatedAt))
	}
	if n := standin.Count(reqs, s.id); n != 1 {
		t.notOnce++
		bad = fmt.Sprintf("the model got the prompt %d times", n)
	}
	if tr.SubmittedAt != nil {
		t.submitted++
		st.submitted++
		t.toSubmit = append(t.toSubmit, tr.SubmittedAt.Sub(tr.CreatedAt))
	}
	if tr.DeliveryBackend != "" {
		t.backends[tr.DeliveryBackend]++
	}
	if tr.State == "acked" && tr.AckedAt != nil {
		t.acked++
		st.acked++
		t.signals[tr.AckSignal]++
		t.toAck = append(t.toAck, tr.AckedAt.Sub(tr.CreatedAt))
	} else if bad == "" {
		bad = "not acked"
	}
	if tr.TurnEndedAt != nil {
		t.replied++
		st.replied++
		t.toEnd = append(t.toEnd, tr.TurnEndedAt.Sub(tr.CreatedAt))
		if strings.Contains(tr.Reply, s.id) {
			t.replyHolds++
		}
	}
	return bad
}

// printKinds prints one line per prompt kind that was sent, in the prompts' order.
func (t *tally) printKinds(prompts []standin.Prompt) {
	for _, p := range prompts {
		if st := t.kinds[p.Kind]; st != nil {
			fmt.Printf("  %-12s sent %2d  submitted %2d  acked %2d  replied %2d\n", p.Kind, st.sent, st.submitted, st.acked, st.replied)
		}
	}
}
