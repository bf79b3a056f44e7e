package web

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/view"
)

// TestFleetCards: GET /api/v1/fleet is the runtimes the API shows this token, as the
// cards of package view (state word, badges, queue, last receipt, dialog); the API's
// refusal is the browser's too, and an unpaired browser gets nothing.
func TestFleetCards(t *testing.T) {
	r := newRig(t, Config{})
	now := time.Now()
	rt := func(ws, role string) api.Runtime {
		return api.Runtime{Runtime: nudge.Runtime{RuntimeID: "rt_" + ws + "." + role, WorkspaceID: ws, Role: role, Status: nudge.StatusReady, Readiness: nudge.Ready}}
	}
	a, b := rt("w", "a"), rt("w", "b")
	b.Readiness = nudge.NeedsConfirmation
	b.Dialog = &nudge.Dialog{DialogID: "d1", Title: "Run rm?", Options: []nudge.DialogOption{{Key: "1", Label: "Yes"}}}
	refuse := false
	r.answer = func(w http.ResponseWriter, req *http.Request, c auth.Caller) bool {
		switch {
		case refuse:
			fail(w, nudge.NewError(nudge.Forbidden, "not yours"))
		case req.URL.Path == "/v1/runtimes":
			writeJSON(w, 200, []api.Runtime{b, a})
		case req.URL.Path == "/v1/triggers" && req.URL.Query().Get("open") == "1":
			writeJSON(w, 200, []api.Trigger{{TriggerID: "t2", WorkspaceID: "w", Agent: "a", State: nudge.StateQueued, Prompt: "next", CreatedAt: now}})
		case req.URL.Path == "/v1/triggers" && req.URL.Query().Get("runtime") == "rt_w.a" && req.URL.Query().Get("limit") == "1":
			writeJSON(w, 200, []api.Trigger{{TriggerID: "t1", WorkspaceID: "w", Agent: "a", State: nudge.StateAcked, Closed: true, Reply: "done", CreatedAt: now.Add(-time.Minute)}})
		case req.URL.Path == "/v1/triggers" && req.URL.Query().Get("runtime") == "rt_w.b":
			writeJSON(w, 200, []api.Trigger{})
		default:
			return false
		}
		return true
	}
	c := r.client()
	if resp, _ := c.do("GET", "/api/v1/fleet", ""); resp.StatusCode != 401 {
		t.Fatalf("unpaired: %d", resp.StatusCode)
	}
	c.pair("read")
	resp, body := c.do("GET", "/api/v1/fleet", "")
	var cards []view.Card
	if err := json.Unmarshal([]byte(body), &cards); resp.StatusCode != 200 || err != nil {
		t.Fatalf("fleet: %d %s %v", resp.StatusCode, body, err)
	}
	if len(cards) != 2 || cards[0].RuntimeID != "rt_w.a" || cards[0].Queue != 1 || cards[0].Last == nil || cards[0].Last.TriggerID != "t2" ||
		cards[1].State != "NEEDS_CONFIRMATION" || cards[1].Dialog == nil || !slices.Contains(cards[1].Badges, view.BadgeDialog) {
		t.Fatalf("cards: %s", body)
	}
	for _, want := range []string{"GET /v1/runtimes as web:t#", "GET /v1/triggers as web:t#"} {
		if !slices.ContainsFunc(r.reachedAPI(), func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("the API did not see %q: %v", want, r.reachedAPI())
		}
	}
	refuse = true
	if resp, body := c.do("GET", "/api/v1/fleet", ""); resp.StatusCode != 403 {
		t.Fatalf("the API's refusal: %d %s", resp.StatusCode, body)
	}
}
