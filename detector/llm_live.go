package detector

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// llmRetryAfter is how long a screen the LLM failed on waits before it is asked again.
const llmRetryAfter = 30 * time.Second

// DefaultLLMSettle is MonitorConfig.LLMSettle's default.
const DefaultLLMSettle = 2 * time.Second

// LLMCall is one question the Monitor asked the LLM classifier (published on MonitorConfig.Bus).
type LLMCall struct {
	RuntimeID string
	Outcome   LLMOutcome
	// Took is the question's time on the wire, retries and their backoff included (not
	// the LLMSettle wait before it).
	Took time.Duration
	// Override is whether the LLM's verdict (Outcome ok) named another state than the
	// rules' unsure verdict on the screen it was asked about.
	Override bool
}

// llmAsk is a pane's question to the LLM classifier and its answer. Guarded by
// paneState.mu.
type llmAsk struct {
	screen   string             // the screen last asked about
	pending  bool               // its request is in flight
	verdict  *Classification    // its answer; nil while pending or after a failure
	failedAt time.Time          // when its request failed
	cancel   context.CancelFunc // ends its request: one request per pane in flight
	gen      uint64             // which question this is: a superseded one's answer is dropped
}

// llmVerdict returns the rules' verdict c on screen with the LLM's answer for that very
// screen put in, if there is one, and whether the LLM should be asked (no answer yet, no
// request in flight). The LLM never waits in the capture path: the rules' verdict is
// applied at once and the answer, when it comes, replaces it (llmAsker.apply).
func (m *Monitor) llmVerdict(ps *paneState, screen string, c Classification) (Classification, bool) {
	if c.Confident || m.cfg.LLM == nil || strings.TrimSpace(nudge.StripANSI(screen)) == "" {
		return c, false // a blank screen tells the LLM nothing either
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	a := &ps.llm
	switch {
	case a.screen != screen:
		return c, true
	case a.verdict != nil:
		return mergeLLM(c, *a.verdict), false
	case a.pending:
		return c, false
	}
	return c, m.cfg.Now().Sub(a.failedAt) >= llmRetryAfter
}

// mergeLLM takes the state, summary and actions from the LLM's verdict and what the
// input line holds from the rules' (the LLM never decides what a human typed).
func mergeLLM(rules, llm Classification) Classification {
	rules.State, rules.Summary, rules.ActionsNeeded, rules.Confident = llm.State, llm.Summary, llm.ActionsNeeded, true
	return rules
}

// llmAsker asks the LLM classifier about the screens the packs were unsure of: one
// question per pane in flight, each on a goroutine of its own that the Monitor's
// WaitGroup counts (Close waits for it) and the pane's context ends. An answer replaces
// the rules' verdict through the reporter. The question and its answer are the pane's
// (paneState.llm, under its mu); llmVerdict reads them.
type llmAsker struct {
	cfg    *MonitorConfig
	wg     *sync.WaitGroup
	report *reporter
}

// ask sends screen to the LLM on a goroutine of its own (owned by the Monitor, ended by
// the pane's context), once no output has arrived for LLMSettle after the capture (seq),
// and applies the answer if there is still none — the screen it describes is still the
// one shown. A failure or a timeout only leaves the rules' verdict in place.
func (a *llmAsker) ask(ps *paneState, pack *Pack, screen string, seq uint64, rules nudge.Readiness) {
	ps.mu.Lock()
	if ps.llm.pending && ps.llm.screen == screen {
		ps.mu.Unlock()
		return
	}
	if ps.llm.cancel != nil {
		ps.llm.cancel() // the screen it asked about is gone
	}
	ctx, cancel := context.WithCancel(ps.ctx)
	gen := ps.llm.gen + 1
	ps.llm = llmAsk{screen: screen, pending: true, cancel: cancel, gen: gen}
	ps.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		if !a.settled(ctx, ps, seq) {
			a.drop(ps, gen)
			return
		}
		start := time.Now()
		lc, err := a.cfg.LLM.Classify(ctx, pack, screen)
		out := LLMOutcomeOf(err)
		nudge.Publish(a.cfg.Bus, LLMCall{RuntimeID: ps.id, Outcome: out, Took: time.Since(start),
			Override: out == LLMOK && lc.State != rules})
		a.apply(ps, gen, seq, lc, err)
	}()
}

// apply records the answer to question gen about the screen captured at output count
// seq: a failure is remembered (asked again after llmRetryAfter), a verdict replaces the
// rules' verdict if the screen is still the one shown. Runs on the question's goroutine.
func (a *llmAsker) apply(ps *paneState, gen, seq uint64, lc Classification, err error) {
	ps.mu.Lock()
	if ps.llm.gen != gen { // a newer question was asked meanwhile
		ps.mu.Unlock()
		return
	}
	ps.llm.pending, ps.llm.cancel = false, nil
	if err != nil || lc.State == "" {
		ps.llm.failedAt = a.cfg.Now()
		ps.mu.Unlock()
		if ps.ctx.Err() == nil {
			a.cfg.Logger.Warn("llm classifier failed: the rules' verdict stands", "runtime", ps.id, "error", err)
		}
		return
	}
	ps.llm.verdict = &lc
	if ps.outSeq.Load() != seq {
		ps.mu.Unlock() // the screen moved on; its next capture classifies again
		return
	}
	c := ps.intakeView(mergeLLM(ps.class, lc), seq, "", a.cfg.Now()) // READY reads BUSY while nudge's prompt is taken in
	changed := c.State != ps.class.State || c.Summary != ps.class.Summary
	ps.class = c
	ps.dialog = c.State == nudge.NeedsConfirmation
	ps.mu.Unlock()
	a.cfg.Logger.Debug("llm classified", "runtime", ps.id, "state", c.State, "summary", c.Summary)
	if changed {
		a.report.publish(ps, c)
	}
}

// settled waits LLMSettle and reports whether the pane showed no output meanwhile.
func (a *llmAsker) settled(ctx context.Context, ps *paneState, seq uint64) bool {
	t := time.NewTimer(a.cfg.LLMSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	return ps.outSeq.Load() == seq
}

// drop forgets a question that was never sent (the screen changed while it settled):
// the next capture of that screen asks again.
func (a *llmAsker) drop(ps *paneState, gen uint64) {
	ps.mu.Lock()
	if ps.llm.gen == gen {
		ps.llm = llmAsk{gen: gen}
	}
	ps.mu.Unlock()
}
