package hub

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
)

// TestRemoteIgnoresAnotherWorkspacesID: a host that lists a runtime of its own workspace
// under the id of another workspace's runtime (held by another host) is not given acts
// on that id: Remote leaves the record out, and an id listed twice is the first host's.
func TestRemoteIgnoresAnotherWorkspacesID(t *testing.T) {
	f := &Fleet{cfg: Config{HostName: "hub"}, log: hclog.NewNullLogger(),
		runtimes: map[string][]nudge.Runtime{}, claims: map[string]string{"wa": "a", "wc": "c"},
		alive: map[string]bool{"a": true, "c": true}, versions: map[string]uint64{}}
	f.runtimes["a"] = []nudge.Runtime{{RuntimeID: "rt_wa.x", WorkspaceID: "wa"}}
	f.runtimes["c"] = []nudge.Runtime{{RuntimeID: "rt_wa.x", WorkspaceID: "wc"}, {RuntimeID: "rt_wc.y", WorkspaceID: "wc"}}
	got := map[string]string{}
	for _, rt := range f.Remote() {
		if prev, ok := got[rt.RuntimeID]; ok {
			t.Fatalf("%s listed twice (%s, %s)", rt.RuntimeID, prev, rt.Host)
		}
		got[rt.RuntimeID] = rt.Host
	}
	if got["rt_wa.x"] != "a" || got["rt_wc.y"] != "c" || len(got) != 2 {
		t.Fatalf("remote runtimes: %v", got)
	}
	b, _ := json.Marshal([]nudge.Runtime{{RuntimeID: "rt_wa.x", WorkspaceID: "wc"}, {RuntimeID: "rt_wc.z", WorkspaceID: "wc"}})
	f.onRuntimes("c", b)
	if rts := f.runtimes["c"]; len(rts) != 1 || rts[0].RuntimeID != "rt_wc.z" {
		t.Fatalf("kept of c's list: %+v", rts)
	}
}

// TestPayloadOf: an event relayed from another host is taken only when what it carries is
// of the workspace it is filed under (a token of that workspace reads it).
func TestPayloadOf(t *testing.T) {
	rt := func(id, ws string) any { return map[string]any{"runtime_id": id, "workspace_id": ws} }
	tr := func(id, ws string) any { return map[string]any{"trigger_id": "t1", "runtime_id": id, "workspace": ws} }
	for _, c := range []struct {
		name string
		ev   eventstream.Event
		want bool
	}{
		{"runtime", eventstream.Event{Workspace: "wc", Runtime: rt("rt_wc.a", "wc")}, true},
		{"runtime of another workspace", eventstream.Event{Workspace: "wc", Runtime: rt("rt_wa.a", "wa")}, false},
		{"runtime id of another workspace", eventstream.Event{Workspace: "wc", Runtime: rt("rt_wa.a", "wc")}, false},
		{"trigger", eventstream.Event{Workspace: "wc", Trigger: tr("rt_wc.a", "wc")}, true},
		{"trigger of another workspace", eventstream.Event{Workspace: "wc", Trigger: tr("rt_wa.a", "wa")}, false},
		{"detail", eventstream.Event{Workspace: "wc", Detail: json.RawMessage(`{"runtime_id":"rt_wc.a","readiness":"READY"}`)}, true},
		{"detail of another workspace", eventstream.Event{Workspace: "wc", Detail: json.RawMessage(`{"runtime_id":"rt_wa.a"}`)}, false},
		{"daemon-wide with a runtime", eventstream.Event{Runtime: rt("rt_wa.a", "wa")}, false},
		{"not a record", eventstream.Event{Workspace: "wc", Runtime: "rt_wa.a"}, false},
	} {
		if got := payloadOf(c.ev, c.ev.Workspace); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
