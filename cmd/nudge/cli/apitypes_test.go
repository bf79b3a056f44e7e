package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// TestAPITypesMirrorTheDaemon: the records of package api decode what a real daemon
// answers with no field unknown, and encode back to the same JSON, so the MCP server and
// any other client of api see every field under its wire name.
func TestAPITypesMirrorTheDaemon(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("golden", "sh")
	tr, err := td.trigger(map[string]any{"workspace": "golden", "agent": "sh", "prompt": "echo golden", "trigger_id": "g1", "reason": "golden"})
	if err != nil {
		t.Fatal(err)
	}
	td.waitTrigger(tr.TriggerID, closed)

	raw := func(method, path string) []byte {
		var m json.RawMessage
		if err := td.c.do(context.Background(), method, path, nil, &m); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return m
	}
	check := func(name string, data []byte, v any) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: the daemon sends a field package api lacks: %v\n%s", name, err, data)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		json.Unmarshal(data, &want)
		json.Unmarshal(again, &got)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: package api does not round-trip the daemon's JSON:\ndaemon %s\napi    %s", name, data, again)
		}
	}
	check("health", raw("GET", "/v1/health"), &api.Health{})
	check("runtime", raw("GET", "/v1/runtimes/"+rt.RuntimeID), &api.Runtime{})
	check("runtimes", raw("GET", "/v1/runtimes"), &[]api.Runtime{})
	check("trigger", raw("GET", "/v1/triggers/g1"), &api.Trigger{})
	check("tail", raw("GET", "/v1/runtimes/"+rt.RuntimeID+"/tail?lines=5"), &api.Tail{})
	check("paused runtime", raw("POST", "/v1/runtimes/"+rt.RuntimeID+"/pause"), &api.Runtime{})
	check("triggers", raw("GET", "/v1/triggers?workspace=golden"), &[]api.Trigger{})
	check("audit", raw("GET", "/v1/audit?trigger=g1"), &[]api.AuditRecord{})
	var added json.RawMessage
	if err := td.c.do(context.Background(), "POST", "/v1/schedules", api.ScheduleRequest{Workspace: "golden", Agent: "sh", Prompt: "tick", Every: "1h"}, &added); err != nil {
		t.Fatal(err)
	}
	check("schedule", added, &api.Schedule{})
	check("schedules", raw("GET", "/v1/schedules"), &[]api.Schedule{})

	// The error body, through the Client: a typed *api.Error.
	c := api.NewClient(td.cfg.Socket, "")
	defer c.Close()
	_, err = c.Runtime(context.Background(), "rt_golden.nobody")
	if ts, err := c.Triggers(context.Background(), api.TriggerFilter{Workspace: "golden", Limit: 5}); err != nil || len(ts) != 1 || ts[0].TriggerID != "g1" {
		t.Fatalf("Triggers: %v %+v", err, ts)
	}
	if recs, err := c.Audit(context.Background(), "g1"); err != nil || len(recs) == 0 {
		t.Fatalf("Audit: %v %d", err, len(recs))
	}
	var ae *api.Error
	if !asAPIError(err, &ae) || ae.ErrorCode != "NOT_FOUND" || ae.Message == "" {
		t.Fatalf("unknown runtime: %#v", err)
	}
	if _, err := api.NewClient(td.cfg.Socket+".absent", "").Health(context.Background()); !asAPIError(err, &ae) || ae.ErrorCode != "UNAVAILABLE" {
		t.Fatalf("no daemon: %#v", err)
	}
}

func asAPIError(err error, ae **api.Error) bool {
	e, ok := err.(*api.Error)
	*ae = e
	return ok
}
