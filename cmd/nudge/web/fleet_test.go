package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestCardFrames: the event stream a page reads carries, after each event that changes
// a runtime, that runtime's card as package view makes it; frames cut across writes are
// read whole; a runtime that leaves is a "gone" card; other events pass untouched.
func TestCardFrames(t *testing.T) {
	f := view.NewFleet()
	f.Reset([]api.Runtime{{Runtime: nudge.Runtime{RuntimeID: "rt_w.a", WorkspaceID: "w", Role: "a", Status: nudge.StatusReady, Readiness: nudge.Ready}}}, nil)
	rec := httptest.NewRecorder()
	cw := &cardWriter{ResponseWriter: rec, fleet: f}
	frames := `id: 1
data: {"type":"runtime","workspace":"w","runtime":{"runtime_id":"rt_w.a","workspace_id":"w","role":"a","status":"ready","readiness":"READY","paused":true}}

id: 2
data: {"type":"alert","detail":{"message":"x"}}

id: 3
data: {"type":"trigger","workspace":"w","trigger":{"trigger_id":"t1","workspace":"w","agent":"a","state":"queued","prompt":"hi"}}

id: 4
data: {"type":"runtime","workspace":"w","runtime":{"runtime_id":"rt_w.a","workspace_id":"w","role":"a","status":"deregistered"}}

`
	for _, part := range []string{frames[:40], frames[40:300], frames[300:]} {
		if n, err := cw.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	out := rec.Body.String()
	if !strings.Contains(out, `data: {"type":"alert"`) || strings.Count(out, "event: card\n") != 3 {
		t.Fatalf("stream:\n%s", out)
	}
	var cards []map[string]any
	for _, l := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && !strings.Contains(d, `"type"`) {
			var c map[string]any
			json.Unmarshal([]byte(d), &c)
			cards = append(cards, c)
		}
	}
	if fmt.Sprint(cards[0]["badges"]) != "[paused]" || cards[0]["state"] != "PAUSED" || cards[1]["queue"] != float64(1) || cards[2]["gone"] != true {
		t.Fatalf("cards: %v", cards)
	}
}
