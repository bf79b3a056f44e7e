package native

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Approval is a request of the agent for its operator's decision, as the agent states it
// (Codex's item/commandExecution/requestApproval, item/fileChange/requestApproval).
type Approval struct {
	ID        json.RawMessage // the JSON-RPC request id, to answer
	Method    string          // the request's method
	Kind      string          // "command", "file_change"
	ThreadID  string
	TurnID    string
	ItemID    string
	Command   string   // the command as the agent will run it ("/bin/bash -lc '…'"); "" for a file change
	Commands  []string // the commands it is made of (commandActions), as the agent's dialog shows them
	Cwd       string
	Reason    string
	Decisions []string // the decisions the agent offers ("accept", "acceptForSession", "decline", "cancel"); nil: not said
	At        time.Time
}

// Offers reports whether the agent offers decision (any, when it did not say).
func (a Approval) Offers(decision string) bool {
	if a.Decisions == nil {
		return decision == "accept" || decision == "decline"
	}
	for _, d := range a.Decisions {
		if d == decision {
			return true
		}
	}
	return false
}

// Notice is one thing a Subscription reports: an approval asked, an approval answered
// (by this client or another: the agent's own screen, another app), or the thread's
// status.
type Notice struct {
	Approval *Approval       // a new request
	Resolved json.RawMessage // the id of a request answered (by anyone)
	Status   string          // thread/status/changed: "active", "idle", …
	Flags    []string        // its activeFlags ("waitingOnApproval", "waitingOnUserInput")
}

// Subscription is one connection that follows a thread of Codex's app-server: the
// approvals it asks for, their answers, its status. Next reads; Answer may be called from
// another goroutine meanwhile.
type Subscription struct {
	rpc      *rpcConn
	threadID string
	wmu      sync.Mutex // one write at a time
}

// Subscribe connects to the app-server and follows thread threadID, which must work in
// cwd (ErrNotThisThread otherwise: the app-server is shared by every Codex of its home).
// The thread's history is not read (excludeTurns).
func (c Codex) Subscribe(ctx context.Context, threadID, cwd string) (*Subscription, error) {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rpc, err := c.open(hctx)
	if err != nil {
		return nil, err
	}
	if err := rpc.threadIn(hctx, threadID, cwd); err != nil {
		rpc.close()
		return nil, err
	}
	if _, err := rpc.call(hctx, "resume", "thread/resume", map[string]any{"threadId": threadID, "excludeTurns": true}); err != nil {
		rpc.close()
		return nil, err
	}
	return &Subscription{rpc: rpc, threadID: threadID}, nil
}

// Close ends the subscription.
func (s *Subscription) Close() { s.rpc.close() }

// Next blocks until the next notice of the subscribed thread (or ctx ends, or the
// connection does: the agent exited, its app-server restarted).
func (s *Subscription) Next(ctx context.Context) (Notice, error) {
	for {
		_, b, err := s.rpc.c.Read(ctx)
		if err != nil {
			return Notice{}, err
		}
		if n, ok := s.notice(b); ok {
			return n, nil
		}
	}
}

// notice reads one message; ok false for what a subscriber does not need.
func (s *Subscription) notice(b []byte) (Notice, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil || m.Method == "" {
		return Notice{}, false
	}
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		if len(m.ID) == 0 {
			return Notice{}, false
		}
		var p struct {
			ThreadID           string `json:"threadId"`
			TurnID             string `json:"turnId"`
			ItemID             string `json:"itemId"`
			Command            string `json:"command"`
			Cwd                string `json:"cwd"`
			Reason             string `json:"reason"`
			AvailableDecisions []any  `json:"availableDecisions"`
			CommandActions     []struct {
				Command string `json:"command"`
			} `json:"commandActions"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != s.threadID {
			return Notice{}, false // another thread's (the server should not send it here)
		}
		a := &Approval{ID: m.ID, Method: m.Method, Kind: "command", ThreadID: p.ThreadID, TurnID: p.TurnID, ItemID: p.ItemID,
			Command: p.Command, Cwd: p.Cwd, Reason: p.Reason, At: time.Now()}
		if strings.HasPrefix(m.Method, "item/fileChange") {
			a.Kind = "file_change"
		}
		for _, c := range p.CommandActions {
			if c.Command != "" {
				a.Commands = append(a.Commands, c.Command)
			}
		}
		if p.AvailableDecisions != nil {
			a.Decisions = []string{}
			for _, d := range p.AvailableDecisions {
				switch v := d.(type) {
				case string:
					a.Decisions = append(a.Decisions, v)
				case map[string]any: // a decision with settings: its one key names it
					for k := range v {
						a.Decisions = append(a.Decisions, k)
					}
				}
			}
		}
		return Notice{Approval: a}, true
	case "serverRequest/resolved":
		var p struct {
			ThreadID  string          `json:"threadId"`
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != s.threadID {
			return Notice{}, false
		}
		return Notice{Resolved: p.RequestID}, true
	case "thread/status/changed":
		var p struct {
			ThreadID string `json:"threadId"`
			Status   struct {
				Type        string   `json:"type"`
				ActiveFlags []string `json:"activeFlags"`
			} `json:"status"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != s.threadID {
			return Notice{}, false
		}
		return Notice{Status: p.Status.Type, Flags: p.Status.ActiveFlags}, true
	}
	return Notice{}, false
}

// Answer answers approval a with decision, one the agent offers.
func (s *Subscription) Answer(ctx context.Context, a Approval, decision string) error {
	if !a.Offers(decision) {
		return fmt.Errorf("%w: the agent does not offer %q for this request (it offers %v)", ErrRefused, decision, a.Decisions)
	}
	b, err := json.Marshal(map[string]any{"id": a.ID, "result": map[string]any{"decision": decision}})
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.rpc.c.Write(ctx, websocket.MessageText, b)
}
