package server

import (
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
)

// fakeHeads is the wake room's Head.
type fakeHeads struct {
	head func(ws, agent, thread, head string) (nudge.Runtime, error)
}

var _ Heads = (*fakeHeads)(nil)

func (f *fakeHeads) Head(ws, agent, thread, head string) (nudge.Runtime, error) {
	return f.head(ws, agent, thread, head)
}

// A thread head takes what triggering the agent takes: a token of workspace a cannot
// report one for b's agent (the wake prompt it would cause is a trigger into b), and bad
// bodies are refused before anything is kept.
func TestThreadHead(t *testing.T) {
	ts := newTestServer(t)
	var got []string
	ts.deps.Heads = &fakeHeads{head: func(ws, agent, thread, head string) (nudge.Runtime, error) {
		got = append(got, ws+"/"+agent+" "+thread+" "+head)
		return nudge.Runtime{RuntimeID: "rt_" + ws + "." + agent, WorkspaceID: ws, Role: agent, LastCursor: "m-1"}, nil
	}}
	st, body := ts.do("POST", "/v1/threads/thr-1/head", "scoped", `{"workspace":"b","agent":"y","head":"m-9"}`)
	wantBody(t, "another workspace", st, body, 403, `"error_code": "FORBIDDEN"`)
	for name, b := range map[string]string{"no agent": `{"workspace":"a","head":"m-2"}`, "unknown field": `{"workspace":"a","agent":"x","head":"m","x":1}`,
		"truncated": `{"workspace":`, "array": `[1]`} {
		st, body := ts.do("POST", "/v1/threads/thr-1/head", "scoped", b)
		wantBody(t, name, st, body, 400, `"error_code": "BAD_REQUEST"`)
	}
	if len(got) != 0 {
		t.Fatalf("heads kept for refused requests: %q", got)
	}
	st, body = ts.do("POST", "/v1/threads/thr-1/head", "scoped", `{"workspace":"a","agent":"x","head":"m-2"}`)
	wantBody(t, "own workspace", st, body, 200, `"runtime_id": "rt_a.x"`, `"cursor": "m-1"`, `"unread": true`)
	if strings.Join(got, ",") != "a/x thr-1 m-2" {
		t.Fatalf("kept: %q", got)
	}
	if len(ts.db.audit) == 0 || ts.db.audit[len(ts.db.audit)-1].Event != "thread_head" {
		t.Fatalf("not audited: %+v", ts.db.audit)
	}
	ts.deps.Heads, ts.s = nil, nil
	st, body = ts.do("POST", "/v1/threads/thr-1/head", "", `{"workspace":"a","agent":"x","head":"m-2"}`)
	wantBody(t, "no wake room", st, body, 503, `"error_code": "UNAVAILABLE"`)
}
