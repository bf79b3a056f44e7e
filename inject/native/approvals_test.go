package native

import (
	"slices"
	"testing"
)

// TestSubscriptionNotices: what a subscription reports of the app-server's messages: an
// approval request of its thread with the decisions offered, a request answered, the
// thread's status; another thread's request, and a request without an id, are passed
// over.
func TestSubscriptionNotices(t *testing.T) {
	s := &Subscription{threadID: "th-1"}
	n, ok := s.notice([]byte(`{"method":"item/commandExecution/requestApproval","id":7,"params":{"threadId":"th-1","turnId":"tu","itemId":"call_1",` +
		`"command":"/bin/bash -lc 'touch a'","cwd":"/w","reason":"why","commandActions":[{"type":"unknown","command":"touch a"}],` +
		`"availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["touch"]}},"cancel"]}}`))
	if !ok || n.Approval == nil {
		t.Fatalf("no approval: %+v %v", n, ok)
	}
	a := *n.Approval
	if string(a.ID) != "7" || a.Kind != "command" || a.Command != "/bin/bash -lc 'touch a'" || !slices.Equal(a.Commands, []string{"touch a"}) ||
		!slices.Equal(a.Decisions, []string{"accept", "acceptWithExecpolicyAmendment", "cancel"}) {
		t.Fatalf("approval %+v", a)
	}
	if !a.Offers("accept") || a.Offers("decline") || !a.Offers("cancel") {
		t.Fatalf("offers: %v", a.Decisions)
	}
	if (Approval{}).Offers("cancel") || !(Approval{}).Offers("decline") {
		t.Fatal("a request that names no decisions: accept and decline only")
	}
	for _, other := range []string{
		`{"method":"item/commandExecution/requestApproval","id":8,"params":{"threadId":"th-2","command":"x"}}`,
		`{"method":"item/commandExecution/requestApproval","params":{"threadId":"th-1","command":"x"}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th-1"}}`,
		`not json`,
	} {
		if n, ok := s.notice([]byte(other)); ok {
			t.Errorf("%s: reported %+v", other, n)
		}
	}
	if n, ok := s.notice([]byte(`{"method":"serverRequest/resolved","params":{"threadId":"th-1","requestId":7}}`)); !ok || string(n.Resolved) != "7" {
		t.Errorf("resolved: %+v %v", n, ok)
	}
	if n, ok := s.notice([]byte(`{"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"active","activeFlags":["waitingOnApproval"]}}}`)); !ok ||
		n.Status != "active" || !slices.Equal(n.Flags, []string{"waitingOnApproval"}) {
		t.Errorf("status: %+v %v", n, ok)
	}
}
