package dialogs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// fakeConn records the commands sent; the agent takes the answer's keys (taken) unless
// lose says how many of the first sends it loses.
type fakeConn struct {
	mu    sync.Mutex
	sent  []string
	lose  int
	taken atomic.Bool
}

func (c *fakeConn) Do(_ context.Context, cmd string) (*controlmode.Reply, error) {
	c.mu.Lock()
	c.sent = append(c.sent, cmd)
	if len(c.sent) > c.lose {
		c.taken.Store(true)
	}
	c.mu.Unlock()
	return &controlmode.Reply{}, nil
}

func (c *fakeConn) sends() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent)
}

type oneRuntime nudge.Runtime

func (r oneRuntime) Get(id string) (nudge.Runtime, bool) { return nudge.Runtime(r), id == r.RuntimeID }

// policyAnswerer is an Answerer whose pane shows dlg and draws on the first drawing
// captures, and once the agent took an answer, with a rule that approves every dialog.
func policyAnswerer(dlg *nudge.Dialog, drawing int64) (*Answerer, *fakeConn, chan nudge.AuditRecord, *atomic.Int64) {
	conn := &fakeConn{}
	audits := make(chan nudge.AuditRecord, 4)
	var captures atomic.Int64
	rt := nudge.Runtime{RuntimeID: "rt1", WorkspaceID: "ws", Agent: "claude", PaneID: "%1", PID: 42, Status: nudge.StatusReady}
	a := New(Config{
		Screen: func(context.Context, nudge.Runtime) (*nudge.Dialog, func() bool, error) {
			n := captures.Add(1)
			return dlg, func() bool { return n <= drawing || conn.taken.Load() }, nil
		},
		Conn:     func(string) (Doer, error) { return conn, nil },
		Runtimes: oneRuntime(rt),
		Rule: func(_, _ string, d nudge.Dialog) (string, string, bool) {
			return "approve", "routine", true
		},
		Audit: func(rec nudge.AuditRecord) { audits <- rec },
	})
	return a, conn, audits, &captures
}

func testDialog() *nudge.Dialog {
	return &nudge.Dialog{DialogID: "d1", Title: "Bash command", Command: "touch auto.txt",
		Options: []nudge.DialogOption{{Key: "1", Label: "Yes"}, {Key: "3", Label: "No"}}, ApproveKey: "1", DenyKey: "3"}
}

// TestPolicyAnswerOutlastsDrawing: a dialog drawn in pieces (the pane keeps drawing for
// more captures than one answer takes, as on a loaded machine) is still answered by the
// policy once the pane settles, once, and audited as the policy's.
func TestPolicyAnswerOutlastsDrawing(t *testing.T) {
	a, conn, audits, captures := policyAnswerer(testDialog(), 3*drawTries)
	a.Shown("rt1", testDialog())
	rec := <-audits
	a.Close()
	if rec.Event != "dialog_answered" || rec.Subject != autoSubject || !strings.Contains(rec.Reason, "routine") {
		t.Fatalf("audit %+v", rec)
	}
	if len(conn.sent) != 1 || !strings.Contains(conn.sent[0], `send-keys -t '\''%1'\'' '\''1'\''`) {
		t.Fatalf("sent %q", conn.sent)
	}
	t.Logf("answered after %d captures: %s", captures.Load(), rec.Reason)
}

// TestPolicyAnswerStopsWhenDialogGoes: a dialog that goes (a human answered it at the
// pane) while the pane draws is not answered late: the policy gives up and says why.
func TestPolicyAnswerStopsWhenDialogGoes(t *testing.T) {
	a, conn, audits, _ := policyAnswerer(testDialog(), 1<<30)
	a.Shown("rt1", testDialog())
	time.Sleep(autoRetry / 2)
	a.Shown("rt1", nil)
	var rec nudge.AuditRecord
	select {
	case rec = <-audits:
	case <-time.After(autoPatience / 2):
		t.Fatal("the policy kept trying a dialog that went")
	}
	a.Close()
	if rec.Event != "dialog_answer_refused" || len(conn.sent) != 0 {
		t.Fatalf("audit %+v, sent %q", rec, conn.sent)
	}
}

// TestPolicyAnswerSentAgainWhenNotTaken: an answer whose key the agent lost (it reached
// the pane before the dialog listened: the dialog stays and the pane draws nothing) is
// sent again once it counts as not taken, and audited once as the policy's; an answer
// taken is never sent twice (TestPolicyAnswerOutlastsDrawing).
func TestPolicyAnswerSentAgainWhenNotTaken(t *testing.T) {
	defer func(d time.Duration) { notTaken = d }(notTaken)
	notTaken = 300 * time.Millisecond
	a, conn, audits, _ := policyAnswerer(testDialog(), 0)
	conn.lose = 1
	a.Shown("rt1", testDialog())
	rec := <-audits
	for deadline := time.Now().Add(10 * time.Second); conn.sends() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * notTaken) // a third key would go by now
	a.Close()
	if rec.Event != "dialog_answered" || rec.Subject != autoSubject {
		t.Fatalf("audit %+v", rec)
	}
	if n := conn.sends(); n != 2 {
		t.Fatalf("sent %d times, want 2 (the lost key, then once more): %q", n, conn.sent)
	}
	// A human's answer to a dialog still shown, its key maybe taken, is refused; once the
	// key counts as lost, the dialog may be answered again.
	b, conn2, _, _ := policyAnswerer(testDialog(), 0)
	conn2.lose = 1 << 30
	rt := nudge.Runtime{RuntimeID: "rt1", WorkspaceID: "ws", Agent: "claude", PaneID: "%1", PID: 42, Status: nudge.StatusReady}
	if _, _, err := b.Answer(context.Background(), rt, "d1", "approve", "alice", ""); err != nil {
		t.Fatal(err)
	}
	var ne *nudge.Error
	if _, _, err := b.Answer(context.Background(), rt, "d1", "approve", "alice", ""); !errors.As(err, &ne) || ne.Code != nudge.DialogAnswered {
		t.Fatalf("second answer at once: %v, want DIALOG_ANSWERED", err)
	}
	time.Sleep(notTaken + 50*time.Millisecond)
	if _, _, err := b.Answer(context.Background(), rt, "d1", "approve", "alice", ""); err != nil {
		t.Fatalf("answer after the key was lost: %v", err)
	}
}
