package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fill sets every field of v (a pointer to a struct) to a non-zero value, so omitempty
// fields show up in its JSON.
func fill(v reflect.Value) {
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		setNonZero(f, v.Type().Field(i).Name)
	}
}

func setNonZero(f reflect.Value, name string) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	if f.Type() == reflect.TypeFor[json.RawMessage]() {
		f.Set(reflect.ValueOf(json.RawMessage(`{"k":"v"}`)))
		return
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString("x-" + name)
	case reflect.Int, reflect.Int64:
		f.SetInt(7)
	case reflect.Uint64:
		f.SetUint(7)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		setNonZero(s.Index(0), name)
		f.Set(s)
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		setNonZero(p.Elem(), name)
		f.Set(p)
	case reflect.Struct:
		if f.Type() == reflect.TypeFor[time.Time]() {
			f.Set(reflect.ValueOf(at))
			return
		}
		fill(f.Addr())
	}
}

// strictRoundTrip decodes data into v refusing unknown fields and returns v's JSON.
func strictRoundTrip(t *testing.T, data []byte, v any) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%T lacks a field the daemon sends: %v", v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSON(t *testing.T, name string, want, got []byte) {
	t.Helper()
	var w, g any
	json.Unmarshal(want, &w)
	json.Unmarshal(got, &g)
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s:\nwant %s\ngot  %s", name, want, got)
	}
}

// TestRecordsMirrorTheStore: every field the daemon sends of a trigger or a runtime (its
// store record, every optional field set) has the same name in package api.
func TestRecordsMirrorTheStore(t *testing.T) {
	var st nudge.Trigger
	fill(reflect.ValueOf(&st))
	data, _ := json.Marshal(st)
	sameJSON(t, "trigger", data, strictRoundTrip(t, data, &Trigger{}))

	var sr nudge.Runtime
	fill(reflect.ValueOf(&sr))
	data, _ = json.Marshal(struct {
		nudge.Runtime
		QueueDepth int    `json:"queue_depth"`
		PTYBackend string `json:"pty_backend"`
		PTYTarget  string `json:"pty_target"`
		TmuxTarget string `json:"tmux_target"`
	}{sr, 7, "tmux", sr.Target, sr.Target})
	sameJSON(t, "runtime", data, strictRoundTrip(t, data, &Runtime{}))

	var sa nudge.AuditRecord
	fill(reflect.ValueOf(&sa))
	data, _ = json.Marshal(sa)
	sameJSON(t, "audit", data, strictRoundTrip(t, data, &AuditRecord{}))

	var ss nudge.Schedule
	fill(reflect.ValueOf(&ss))
	data, _ = json.Marshal(ss)
	sameJSON(t, "schedule", data, strictRoundTrip(t, data, &Schedule{}))
}

// TestGoldenJSON pins the wire names of the records (go test -update rewrites the files).
func TestGoldenJSON(t *testing.T) {
	for name, v := range map[string]any{
		"trigger": &Trigger{}, "runtime": &Runtime{}, "tail": &Tail{}, "health": &Health{},
		"trigger_request": &TriggerRequest{}, "spawn_request": &SpawnRequest{}, "error": &Error{},
		"audit_record": &AuditRecord{}, "schedule": &Schedule{}, "schedule_request": &ScheduleRequest{},
	} {
		fill(reflect.ValueOf(v))
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", name+".json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update once)", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s: the JSON of %T changed:\nwant %s\ngot  %s", name, v, want, got)
		}
	}
}

// TestReached: which receipts satisfy a wait.
func TestReached(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		t    Trigger
		w    WaitFor
		want bool
	}{
		{Trigger{State: "queued"}, WaitSubmitted, false},
		{Trigger{State: "injected"}, WaitSubmitted, false},
		{Trigger{State: "submitted"}, WaitSubmitted, true},
		{Trigger{State: "acked", Closed: true}, WaitSubmitted, true},
		{Trigger{State: "failed", SubmittedAt: &now, Closed: true}, WaitSubmitted, true},
		{Trigger{State: "failed", Closed: true}, WaitSubmitted, false},
		{Trigger{State: "submitted"}, WaitAcked, false},
		{Trigger{State: "acked", Closed: true}, WaitAcked, true},
		{Trigger{State: "failed", Closed: true}, WaitAcked, false},
		{Trigger{State: "submitted"}, WaitClosed, false},
		{Trigger{State: "failed", Closed: true}, WaitClosed, true},
		{Trigger{State: "acked", Closed: true}, WaitReply, false},
		{Trigger{State: "acked", Closed: true, TurnEndedAt: &now}, WaitReply, true},
		{Trigger{State: "submitted", TurnEndedAt: &now}, WaitReply, false}, // the reply read before the ack is written
	} {
		if got := tc.w.ReachedBy(tc.t); got != tc.want {
			t.Errorf("%s closed=%v reached %s: %v, want %v", tc.t.State, tc.t.Closed, tc.w, got, tc.want)
		}
	}
	// An acked trigger's reply is still to come; a failed one's never is.
	if WaitReply.Over(Trigger{State: "acked", Closed: true}) || !WaitReply.Over(Trigger{State: "failed", Closed: true}) || !WaitAcked.Over(Trigger{State: "acked", Closed: true}) {
		t.Error("Over")
	}
}
