package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

func TestCreateTrigger(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := open(t)
		got, created, err := db.Triggers().CreateTrigger(trig("t1"), &nudge.AuditRecord{Event: "trigger_received", Subject: "alice"})
		if err != nil || !created {
			t.Fatalf("CreateTrigger = %v, %v; want created", created, err)
		}
		if got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
			t.Errorf("times not set: %+v", got)
		}
		stored, err := db.Triggers().GetTrigger("t1")
		if err != nil || stored.Prompt != "hello t1" || !stored.CreatedAt.Equal(got.CreatedAt) {
			t.Errorf("GetTrigger = %+v, %v", stored, err)
		}
		recs, _ := db.AuditLog().Audit(AuditFilter{})
		if len(recs) != 1 || recs[0].TriggerID != "t1" || recs[0].Workspace != "ws" || recs[0].Subject != "alice" {
			t.Errorf("audit = %+v, want one record filled from the trigger", recs)
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		db := open(t)
		first, _, _ := db.Triggers().CreateTrigger(trig("t1"), &nudge.AuditRecord{Event: "trigger_received"})
		second := trig("t1")
		second.Prompt = "different"
		got, created, err := db.Triggers().CreateTrigger(second, &nudge.AuditRecord{Event: "trigger_received"})
		if err != nil || created {
			t.Fatalf("second CreateTrigger = created %v, %v; want false, nil", created, err)
		}
		if got.Prompt != first.Prompt || !got.CreatedAt.Equal(first.CreatedAt) {
			t.Errorf("second CreateTrigger returned %+v, want the first record", got)
		}
		if recs, _ := db.AuditLog().Audit(AuditFilter{}); len(recs) != 1 {
			t.Errorf("audit has %d records, want 1 (no audit for a repeat)", len(recs))
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		db := open(t)
		if _, _, err := db.Triggers().CreateTrigger(nudge.Trigger{}, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("got %v, want ErrInvalid", err)
		}
	})
	t.Run("BadAuditRollsBack", func(t *testing.T) {
		db := open(t)
		_, _, err := db.Triggers().CreateTrigger(trig("t1"), &nudge.AuditRecord{Event: "x", Detail: []byte("{not json")})
		if err == nil {
			t.Fatal("CreateTrigger with an unencodable audit record succeeded")
		}
		if _, err := db.Triggers().GetTrigger("t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("trigger stored despite the failed audit append: %v", err)
		}
	})
}

func TestUpdateTrigger(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := open(t)
		created, _, _ := db.Triggers().CreateTrigger(trig("t1"), nil)
		got, err := db.Triggers().UpdateTrigger("t1", func(tr *nudge.Trigger) error {
			tr.State = "injected"
			return nil
		}, nudge.AuditRecord{Event: "trigger_injected"}, nudge.AuditRecord{Event: "trigger_submitted"})
		if err != nil || got.State != "injected" || !got.UpdatedAt.After(created.UpdatedAt) {
			t.Fatalf("UpdateTrigger = %+v, %v", got, err)
		}
		if stored, _ := db.Triggers().GetTrigger("t1"); stored.State != "injected" {
			t.Errorf("stored state %q, want injected", stored.State)
		}
		recs, _ := db.AuditLog().Audit(AuditFilter{TriggerID: "t1"})
		if len(recs) != 2 || recs[0].Event != "trigger_injected" || recs[1].Event != "trigger_submitted" {
			t.Errorf("audit = %+v", recs)
		}
	})
	t.Run("FnErrorWritesNothing", func(t *testing.T) {
		db := open(t)
		db.Triggers().CreateTrigger(trig("t1"), nil)
		boom := errors.New("boom")
		_, err := db.Triggers().UpdateTrigger("t1", func(tr *nudge.Trigger) error {
			tr.State = "failed"
			return boom
		}, nudge.AuditRecord{Event: "x"})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
		if stored, _ := db.Triggers().GetTrigger("t1"); stored.State != "queued" {
			t.Errorf("state %q written despite fn error", stored.State)
		}
		if recs, _ := db.AuditLog().Audit(AuditFilter{}); len(recs) != 0 {
			t.Errorf("audit appended despite fn error: %+v", recs)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		db := open(t)
		_, err := db.Triggers().UpdateTrigger("nope", func(*nudge.Trigger) error { return nil })
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("ErrInvalidIDChange", func(t *testing.T) {
		db := open(t)
		db.Triggers().CreateTrigger(trig("t1"), nil)
		_, err := db.Triggers().UpdateTrigger("t1", func(tr *nudge.Trigger) error { tr.TriggerID = "t2"; return nil })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("got %v, want ErrInvalid", err)
		}
	})
}

func ids(ts []nudge.Trigger) string {
	s := ""
	for _, t := range ts {
		s += t.TriggerID + " "
	}
	return s
}

func TestListTriggers(t *testing.T) {
	db := open(t)
	for i := 1; i <= 6; i++ {
		tr := trig(fmt.Sprintf("t%d", i))
		tr.RuntimeID = fmt.Sprintf("rt%d", i%2)
		tr.ThreadID = fmt.Sprintf("th%d", i%3)
		if i == 6 {
			tr.WorkspaceID, tr.Agent = "other", "planner"
		}
		if _, _, err := db.Triggers().CreateTrigger(tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	close := func(id string, closed bool) {
		if _, err := db.Triggers().UpdateTrigger(id, func(tr *nudge.Trigger) error { tr.Closed = closed; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	close("t2", true)
	close("t4", true)
	close("t5", true)
	close("t5", false) // reopened
	t3, _ := db.Triggers().GetTrigger("t3")

	for i, tc := range []struct {
		f    TriggerFilter
		want string
	}{
		{TriggerFilter{}, "t1 t2 t3 t4 t5 t6 "},
		{TriggerFilter{OpenOnly: true}, "t1 t3 t5 t6 "},
		{TriggerFilter{OpenOnly: true, RuntimeID: "rt1"}, "t1 t3 t5 "},
		{TriggerFilter{ThreadID: "th0"}, "t3 t6 "},
		{TriggerFilter{Workspace: "other"}, "t6 "},
		{TriggerFilter{Agent: "reviewer", Limit: 2}, "t1 t2 "},
		{TriggerFilter{Limit: 2, Newest: true}, "t5 t6 "},
		{TriggerFilter{OpenOnly: true, Limit: 3, Newest: true}, "t3 t5 t6 "},
		{TriggerFilter{Since: t3.CreatedAt}, "t3 t4 t5 t6 "},
		{TriggerFilter{Since: t3.CreatedAt.Add(time.Hour)}, ""},
	} {
		got, err := db.Triggers().ListTriggers(tc.f)
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if ids(got) != tc.want {
			t.Errorf("#%d: got %q, want %q", i, ids(got), tc.want)
		}
	}
}

func TestAttempts(t *testing.T) {
	db := open(t)
	db.Triggers().CreateTrigger(trig("a"), nil)
	db.Triggers().CreateTrigger(trig("ab"), nil)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, a := range []nudge.Attempt{
		{TriggerID: "a", Backend: "tmux", StartedAt: start},             // n=1
		{TriggerID: "ab", N: 1, Backend: "tmux"},                        // must not show under "a"
		{TriggerID: "a", Backend: "tmux", Detail: []byte(`{"try":2}`)},  // n=2
		{TriggerID: "a", N: 1, Backend: "tmux", Outcome: "ack_timeout"}, // replaces n=1
		{TriggerID: "a", N: 300, Backend: "resume"},                     // sorts after 2 (big-endian)
	} {
		if err := db.Triggers().AddAttempt(a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Triggers().Attempts("a")
	if err != nil {
		t.Fatal(err)
	}
	var ns []int
	for _, a := range got {
		ns = append(ns, a.N)
	}
	if fmt.Sprint(ns) != "[1 2 300]" {
		t.Fatalf("attempt numbers %v, want [1 2 300]", ns)
	}
	if got[0].Outcome != "ack_timeout" || string(got[1].Detail) != `{"try":2}` || got[2].Backend != "resume" {
		t.Errorf("attempts = %+v", got)
	}
	if tr, _ := db.Triggers().GetTrigger("a"); tr.Attempts != 300 {
		t.Errorf("trigger Attempts = %d, want 300", tr.Attempts)
	}
	if got, _ := db.Triggers().Attempts("ab"); len(got) != 1 {
		t.Errorf("Attempts(ab) = %d records, want 1", len(got))
	}
	if got, err := db.Triggers().Attempts("none"); err != nil || len(got) != 0 {
		t.Errorf("Attempts(none) = %v, %v", got, err)
	}
	if err := db.Triggers().AddAttempt(nudge.Attempt{TriggerID: "none"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("AddAttempt for a missing trigger: %v, want ErrNotFound", err)
	}
}
