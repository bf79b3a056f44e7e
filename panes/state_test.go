package panes

import (
	"errors"
	"testing"

	"github.com/nudgehq/nudge"
)

var allStatuses = []nudge.Status{
	nudge.StatusStarting, nudge.StatusReady, nudge.StatusTriggering, nudge.StatusAwaitingAck,
	nudge.StatusRetrying, nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusFailed,
	nudge.StatusOffline, nudge.StatusPaused, nudge.StatusDeregistered, nudge.StatusExited,
}

func TestCanTransition_Seed(t *testing.T) {
	seed := [][2]nudge.Status{
		{nudge.StatusStarting, nudge.StatusReady}, {nudge.StatusStarting, nudge.StatusFailed},
		{nudge.StatusReady, nudge.StatusTriggering}, {nudge.StatusTriggering, nudge.StatusAwaitingAck},
		{nudge.StatusTriggering, nudge.StatusFailed}, {nudge.StatusAwaitingAck, nudge.StatusReady},
		{nudge.StatusAwaitingAck, nudge.StatusRetrying}, {nudge.StatusAwaitingAck, nudge.StatusFallbackResume},
		{nudge.StatusRetrying, nudge.StatusAwaitingAck}, {nudge.StatusRetrying, nudge.StatusFailed},
		{nudge.StatusFallbackResume, nudge.StatusReady}, {nudge.StatusFallbackResume, nudge.StatusSpawnRecovery},
		{nudge.StatusSpawnRecovery, nudge.StatusStarting}, {nudge.StatusSpawnRecovery, nudge.StatusFailed},
		{nudge.StatusReady, nudge.StatusOffline}, {nudge.StatusOffline, nudge.StatusStarting},
		{nudge.StatusOffline, nudge.StatusFailed}, {nudge.StatusFailed, nudge.StatusStarting},
		{nudge.StatusFailed, nudge.StatusDeregistered},
	}
	for i, e := range seed {
		if !CanTransition(e[0], e[1]) {
			t.Errorf("#%d: %s -> %s refused, want allowed", i, e[0], e[1])
		}
	}
}

func TestCanTransition_Practical(t *testing.T) {
	for _, from := range allStatuses {
		if Live(from) && !CanTransition(from, nudge.StatusOffline) {
			t.Errorf("%s -> offline refused: a pane can always die", from)
		}
		if from != nudge.StatusDeregistered && !CanTransition(from, nudge.StatusDeregistered) {
			t.Errorf("%s -> deregistered refused", from)
		}
		if CanTransition(from, from) {
			t.Errorf("%s -> itself allowed", from)
		}
		if CanTransition(nudge.StatusDeregistered, from) {
			t.Errorf("deregistered -> %s allowed: deregistered is final", from)
		}
	}
	for _, e := range [][2]nudge.Status{
		{nudge.StatusReady, nudge.StatusPaused}, {nudge.StatusPaused, nudge.StatusReady},
		{nudge.StatusAwaitingAck, nudge.StatusOffline}, {nudge.StatusOffline, nudge.StatusReady},
	} {
		if !CanTransition(e[0], e[1]) {
			t.Errorf("%s -> %s refused", e[0], e[1])
		}
	}
}

func TestCanTransition_Illegal(t *testing.T) {
	for _, e := range [][2]nudge.Status{
		{nudge.StatusStarting, nudge.StatusAwaitingAck}, {nudge.StatusOffline, nudge.StatusTriggering},
		{nudge.StatusFailed, nudge.StatusOffline}, {nudge.StatusPaused, nudge.StatusTriggering},
		{nudge.StatusReady, "bogus"}, {"bogus", nudge.StatusReady}, {nudge.StatusSpawnRecovery, nudge.StatusReady},
	} {
		if CanTransition(e[0], e[1]) {
			t.Errorf("%s -> %s allowed, want refused", e[0], e[1])
		}
		var te *TransitionError
		if err := checkTransition(e[0], e[1]); !errors.As(err, &te) || te.From != e[0] || te.To != e[1] {
			t.Errorf("%s -> %s: got %v", e[0], e[1], err)
		}
	}
}

func TestLive(t *testing.T) {
	for _, s := range allStatuses {
		want := s != nudge.StatusOffline && s != nudge.StatusFailed && s != nudge.StatusDeregistered && s != nudge.StatusExited
		if Live(s) != want {
			t.Errorf("Live(%s) = %v, want %v", s, Live(s), want)
		}
	}
	if Live("bogus") {
		t.Error("Live(bogus)")
	}
}
