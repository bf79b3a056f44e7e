package detector

import (
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// The LLM's verdict decides the state, never what the input line holds: before, it
// replaced the rules' verdict whole and the composer, draft and queue reading were lost.
func TestLLMVerdictKeepsTheInputLine(t *testing.T) {
	m := &Monitor{cfg: MonitorConfig{LLM: &LLM{}, Now: time.Now}}
	ps := &paneState{}
	rules := Classification{State: nudge.Unknown, Summary: "?", Draft: "half typed", Composer: true, Queued: true}
	screen := "something odd\n> half typed"

	if _, ask := m.llmVerdict(ps, screen, rules); !ask {
		t.Fatal("an unsure verdict on a new screen does not ask the LLM")
	}
	if _, ask := m.llmVerdict(ps, "\x1b[0m  \n ", rules); ask {
		t.Error("a blank screen asks the LLM")
	}
	sure := rules
	sure.Confident = true
	if _, ask := m.llmVerdict(ps, screen, sure); ask {
		t.Error("a confident verdict asks the LLM")
	}

	ps.llm = llmAsk{screen: screen, pending: true}
	if c, ask := m.llmVerdict(ps, screen, rules); ask || c.State != nudge.Unknown {
		t.Errorf("while the question is in flight: %+v, ask %v; want the rules' verdict, no second question", c, ask)
	}
	ps.llm = llmAsk{screen: screen, verdict: &Classification{State: nudge.Ready, Summary: "idle", Confident: true}}
	c, ask := m.llmVerdict(ps, screen, rules)
	if ask || c.State != nudge.Ready || c.Summary != "idle" || !c.Confident ||
		c.Draft != "half typed" || !c.Composer || !c.Queued {
		t.Errorf("answered: %+v, ask %v", c, ask)
	}
	ps.llm = llmAsk{screen: screen, failedAt: time.Now()}
	if _, ask := m.llmVerdict(ps, screen, rules); ask {
		t.Error("a screen the LLM just failed on is asked about again at once")
	}
	ps.llm.failedAt = time.Now().Add(-llmRetryAfter)
	if _, ask := m.llmVerdict(ps, screen, rules); !ask {
		t.Error("a failed screen is never asked about again")
	}
}
