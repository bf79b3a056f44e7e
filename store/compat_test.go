package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// The compatibility file: testdata/compat-v1.db (+ .creates, a create log with one
// unreplayed line) was written once by the store as it was before the domain records
// moved to the root package, holding every kind of record. TestCompatFile opens a copy
// and reads every record back: a change to a JSON tag, a field's type or the bucket
// layout fails it. Regenerate only on purpose (a deliberate format change):
//
//	go test ./store -run TestCompatFile -write-compat
var writeCompat = flag.Bool("write-compat", false, "rewrite testdata/compat-v1.db")

const compatFile = "testdata/compat-v1.db"

var compatT0 = time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC)

func compatAt(min int) time.Time { return compatT0.Add(time.Duration(min) * time.Minute) }

func compatPtr(min int) *time.Time { t := compatAt(min); return &t }

func compatInt(n int) *int { return &n }

func compatRuntimes() []nudge.Runtime {
	return []nudge.Runtime{{
		RuntimeID: "ws1/reviewer", WorkspaceID: "ws1", Host: "build@box", Role: "reviewer",
		AgentID: "reviewer", Agent: "codex", SessionID: "sess-1", Dir: "/src/proj",
		Argv: []string{"codex", "--yolo"}, Managed: true, TmuxSession: "nudge-ws1",
		TmuxWindow: "reviewer", TmuxPane: 1, Target: "nudge-ws1:reviewer.1", PaneID: "%7",
		PID: 4242, Status: "awaiting_ack", Readiness: "BUSY", Summary: "working",
		OperatorBusy: true, InputLine: "draft", Paused: true, ExitStatus: compatInt(3),
		LastHeartbeatAt: compatAt(1), LastCursor: "12:3", LastTriggerID: "t-acked",
		Breaker: "open", CooldownUntil: compatPtr(9), Failures: []time.Time{compatAt(2), compatAt(3)},
		Restarts: 2, CreatedAt: compatAt(0), UpdatedAt: compatAt(4), StatusSince: compatAt(4),
	}, {
		RuntimeID: "ws1/shell", WorkspaceID: "ws1", Role: "shell", AgentID: "shell", Agent: "shell",
		TmuxSession: "nudge-ws1", TmuxWindow: "shell", Target: "nudge-ws1:shell.0", PaneID: "%8",
		Status: "ready", Readiness: "READY", InputLine: "empty",
		CreatedAt: compatAt(0), UpdatedAt: compatAt(0), StatusSince: compatAt(0),
	}}
}

func compatTriggers() []nudge.Trigger {
	return []nudge.Trigger{{
		TriggerID: "t-acked", WorkspaceID: "ws1", Agent: "reviewer", RuntimeID: "ws1/reviewer",
		Host: "build@box", ThreadID: "th-1", Prompt: "review PR 12\nplease", Reason: "ci green",
		AckTimeoutMS: 90000, ForceOverride: true, OverrideIntent: "human_override",
		Caller: "orchestrator", CallerUID: 1000, ScheduleID: "s-daily",
		State: "acked", Result: "delivered", DeliveryBackend: "tmux", AckSignal: "marker",
		Attempts: 2, Closed: true, QueuedInAgent: true,
		CreatedAt: compatAt(10), QueuedAt: compatAt(10), DeferredAt: compatPtr(11),
		DeferredUntil: compatPtr(12), InjectedAt: compatPtr(13), SubmittedAt: compatPtr(14),
		DeliveredAt: compatPtr(14), AckedAt: compatPtr(15), UpdatedAt: compatAt(15),
	}, {
		TriggerID: "t-failed", WorkspaceID: "ws1", Agent: "reviewer", RuntimeID: "ws1/reviewer",
		Prompt: "fix it", State: "failed", Result: "failed", ErrorCode: "RESUME_FAILED",
		Message: "resume exited 1", Fallback: "resume", FallbackRuntimeID: "ws1/reviewer-fb-1",
		FallbackPane: "%9", Attempts: 1, Closed: true,
		CreatedAt: compatAt(20), QueuedAt: compatAt(20), FailedAt: compatPtr(22),
		NextAttemptAt: compatPtr(21), UpdatedAt: compatAt(22),
	}, {
		TriggerID: "t-open", WorkspaceID: "ws1", Agent: "shell", RuntimeID: "ws1/shell",
		Prompt: "ls", State: "deferred", Result: "deferred", ErrorCode: "OPERATOR_BUSY",
		CreatedAt: compatAt(30), QueuedAt: compatAt(30), DeferredAt: compatPtr(30),
		DeferredUntil: compatPtr(40), UpdatedAt: compatAt(30),
	}}
}

// compatLogged is the trigger in the create log, replayed into bbolt by Open.
func compatLogged() nudge.Trigger {
	return nudge.Trigger{TriggerID: "t-logged", WorkspaceID: "ws1", Agent: "shell", RuntimeID: "ws1/shell",
		Prompt: "pwd", State: "queued", Result: "pending",
		CreatedAt: compatAt(50), QueuedAt: compatAt(50), UpdatedAt: compatAt(50)}
}

func compatAttempts() []nudge.Attempt {
	return []nudge.Attempt{
		{TriggerID: "t-acked", N: 1, Backend: "tmux", StartedAt: compatAt(13), EndedAt: compatAt(13),
			Outcome: "failed", ErrorCode: "SEND_KEYS_ERROR", Detail: json.RawMessage(`{"why":"pane busy"}`)},
		{TriggerID: "t-acked", N: 2, Backend: "tmux", StartedAt: compatAt(14), EndedAt: compatAt(15), Outcome: "acked"},
		{TriggerID: "t-failed", N: 1, Backend: "resume", StartedAt: compatAt(21), Outcome: "failed", ErrorCode: "RESUME_FAILED"},
	}
}

func compatAudit() []nudge.AuditRecord {
	return []nudge.AuditRecord{
		{Time: compatAt(5), Event: "runtime_registered", RuntimeID: "ws1/reviewer", Workspace: "ws1",
			Subject: "admin", PeerUID: compatInt(1000), Reason: "start"},
		{Time: compatAt(15), Event: "ack_received", TriggerID: "t-acked", ThreadID: "th-1",
			RuntimeID: "ws1/reviewer", Workspace: "ws1", Detail: json.RawMessage(`{"signal":"marker"}`)},
		{Time: compatAt(22), Event: "trigger_failed", TriggerID: "t-failed", Code: "RESUME_FAILED"},
	}
}

// zeroTimeField matches a JSON field holding the zero time, with its comma.
var zeroTimeField = regexp.MustCompile(`"[a-z_]+":"0001-01-01T00:00:00Z",?`)

// everyNanos matches a schedule's every written as nanoseconds.
var everyNanos = regexp.MustCompile(`"every":(\d+)`)

func compatSchedules() []nudge.Schedule {
	return []nudge.Schedule{{ScheduleID: "s-daily", WorkspaceID: "ws1", Agent: "reviewer", Prompt: "daily check",
		Every: 24 * time.Hour, NextAt: compatAt(60), LastAt: compatAt(-1), CreatedAt: compatAt(0)}}
}

func compatGates() []Gate {
	return []Gate{
		{Kind: GateLoop, Key: "ws1\x00reviewer\x00th-1", Turns: 3, Same: 2, Last: []byte{1, 2, 3},
			Blocked: "loop: 3 turns without progress", UpdatedAt: compatAt(16)},
		{Kind: GateRate, Key: "ws1\x00reviewer\x00th-1", Hits: []time.Time{compatAt(14), compatAt(15)}, UpdatedAt: compatAt(15)},
	}
}

// writeCompatFile writes the compatibility file with today's code.
func writeCompatFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "compat.db")
	db, err := Open(path, Options{Now: func() time.Time { return compatAt(100) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range compatRuntimes() {
		must(t, db.Runtimes().PutRuntime(r))
	}
	for _, tr := range compatTriggers() {
		_, _, err := db.Triggers().CreateTrigger(tr, &nudge.AuditRecord{Time: tr.CreatedAt, Event: "trigger_received", Subject: "orchestrator"})
		must(t, err)
	}
	for _, a := range compatAttempts() {
		must(t, db.Triggers().AddAttempt(a))
	}
	_, err = db.AuditLog().AppendAudit(compatAudit()...)
	must(t, err)
	for _, s := range compatSchedules() {
		must(t, db.Schedules().PutSchedule(s))
	}
	for _, g := range compatGates() {
		must(t, db.Gates().PutGate(g))
	}
	must(t, db.Meta().PutMeta("token_epoch", []byte("7")))
	must(t, db.Close())
	must(t, os.MkdirAll("testdata", 0o755))
	buf, err := os.ReadFile(path)
	must(t, err)
	must(t, os.WriteFile(compatFile, buf, 0o644))
	line, err := json.Marshal(walEntry{Trigger: compatLogged(), Audit: &nudge.AuditRecord{Time: compatAt(50), Event: "trigger_received"}})
	must(t, err)
	must(t, os.WriteFile(compatFile+".creates", append(line, '\n'), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompatFile opens a copy of the compatibility file and reads every record back.
func TestCompatFile(t *testing.T) {
	if *writeCompat {
		writeCompatFile(t)
	}
	path := filepath.Join(t.TempDir(), "nudge.db")
	for _, suffix := range []string{"", ".creates"} {
		buf, err := os.ReadFile(compatFile + suffix)
		must(t, err)
		must(t, os.WriteFile(path+suffix, buf, 0o600))
	}
	// Byte for byte: every stored value re-encodes to exactly the stored bytes (before
	// Open replays the create log, which writes with today's encoding).
	checkReencode(t, path)

	db := openAt(t, path, Options{NoSync: true, Now: func() time.Time { return compatAt(200) }})

	rts, err := db.Runtimes().ListRuntimes()
	must(t, err)
	if want := compatRuntimes(); !reflect.DeepEqual(rts, want) {
		t.Errorf("runtimes:\n got %+v\nwant %+v", rts, want)
	}
	trs, err := db.Triggers().ListTriggers(TriggerFilter{})
	must(t, err)
	want := append(compatTriggers(), compatLogged())
	if !reflect.DeepEqual(trs, want) {
		t.Errorf("triggers:\n got %+v\nwant %+v", trs, want)
	}
	open, err := db.Triggers().ListTriggers(TriggerFilter{OpenOnly: true})
	must(t, err)
	if len(open) != 2 || open[0].TriggerID != "t-open" || open[1].TriggerID != "t-logged" {
		t.Errorf("open triggers: got %d, want t-open and t-logged", len(open))
	}
	var atts []nudge.Attempt
	for _, id := range []string{"t-acked", "t-failed"} {
		a, err := db.Triggers().Attempts(id)
		must(t, err)
		atts = append(atts, a...)
	}
	if want := compatAttempts(); !reflect.DeepEqual(atts, want) {
		t.Errorf("attempts:\n got %+v\nwant %+v", atts, want)
	}
	checkCompatAudit(t, db)
	scs, err := db.Schedules().ListSchedules()
	must(t, err)
	if want := compatSchedules(); !reflect.DeepEqual(scs, want) {
		t.Errorf("schedules:\n got %+v\nwant %+v", scs, want)
	}
	gates, err := db.Gates().ListGates()
	must(t, err)
	if want := compatGates(); !reflect.DeepEqual(gates, want) {
		t.Errorf("gates:\n got %+v\nwant %+v", gates, want)
	}
	meta, err := db.Meta().GetMeta("token_epoch")
	if err != nil || string(meta) != "7" {
		t.Errorf("meta token_epoch: got %q, %v; want \"7\"", meta, err)
	}
}

// checkCompatAudit checks the audit log: the trigger_received records CreateTrigger
// appended, then compatAudit, then the replayed create's, and the chain verifies.
func checkCompatAudit(t *testing.T, db *DB) {
	t.Helper()
	recs, err := db.AuditLog().Audit(AuditFilter{})
	must(t, err)
	var events []string
	for _, r := range recs {
		events = append(events, r.Event+"/"+r.TriggerID)
	}
	wantEvents := []string{"trigger_received/t-acked", "trigger_received/t-failed", "trigger_received/t-open",
		"runtime_registered/", "ack_received/t-acked", "trigger_failed/t-failed", "trigger_received/t-logged"}
	if !reflect.DeepEqual(events, wantEvents) {
		t.Fatalf("audit events: got %q, want %q", events, wantEvents)
	}
	for i, w := range compatAudit() {
		got := recs[3+i]
		w.Seq, w.PrevHash, w.Hash = got.Seq, got.PrevHash, got.Hash
		if !reflect.DeepEqual(got, w) {
			t.Errorf("audit #%d:\n got %+v\nwant %+v", 3+i, got, w)
		}
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil || n != len(wantEvents) {
		t.Errorf("VerifyAudit: got %d, %v; want %d, nil", n, err, len(wantEvents))
	}
}

// checkReencode decodes every record of the file at path and checks that encoding it
// again gives the stored bytes.
func checkReencode(t *testing.T, path string) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	must(t, err)
	defer bdb.Close()
	kinds := map[string]func() any{
		string(bucketRuntimes):  func() any { return new(nudge.Runtime) },
		string(bucketTriggers):  func() any { return new(nudge.Trigger) },
		string(bucketAttempts):  func() any { return new(nudge.Attempt) },
		string(bucketAudit):     func() any { return new(nudge.AuditRecord) },
		string(bucketSchedules): func() any { return new(nudge.Schedule) },
		string(bucketGates):     func() any { return new(Gate) },
	}
	counts := map[string]int{}
	err = bdb.View(func(tx *bolt.Tx) error {
		for name, mk := range kinds {
			err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
				p := mk()
				if err := json.Unmarshal(v, p); err != nil {
					t.Errorf("%s %q: decode: %v", name, k, err)
					return nil
				}
				again, _ := json.Marshal(p)
				// Absent times are omitted, not written as year 1: an old record's zero
				// times read back as zero and are left out when it is written again; a
				// schedule's every, once nanoseconds, is written as a duration string. All
				// else is byte for byte.
				v = zeroTimeField.ReplaceAll(v, nil)
				v = everyNanos.ReplaceAllFunc(v, func(m []byte) []byte {
					n, _ := strconv.ParseInt(string(everyNanos.FindSubmatch(m)[1]), 10, 64)
					return []byte(`"every":"` + time.Duration(n).String() + `"`)
				})
				if !bytes.Equal(again, v) {
					t.Errorf("%s %q: re-encoded\n got %s\nwant %s", name, k, again, v)
				}
				counts[name]++
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	want := map[string]int{"runtimes": 2, "triggers": 3, "attempts": 3, "audit": 6, "schedules": 1, "gates": 2}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("records per bucket: got %v, want %v", counts, want)
	}
}
