package nudge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRecordsJSON: durations are strings ("2m0s"), absent times are left out rather than
// written as 0001-01-01, and a schedule written with every in nanoseconds still reads.
func TestRecordsJSON(t *testing.T) {
	sc := Schedule{ScheduleID: "s", WorkspaceID: "w", Agent: "a", Prompt: "p", Every: 2 * time.Minute,
		NextAt: time.Unix(100, 0).UTC(), CreatedAt: time.Unix(50, 0).UTC()}
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"every":"2m0s"`) || strings.Contains(s, "0001-01-01") || strings.Contains(s, "last_at") {
		t.Fatalf("schedule JSON: %s", s)
	}
	var back Schedule
	if err := json.Unmarshal(b, &back); err != nil || back != sc {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	old := strings.Replace(string(b), `"2m0s"`, "120000000000", 1)
	if err := json.Unmarshal([]byte(old), &back); err != nil || back.Every != 2*time.Minute {
		t.Fatalf("every in nanoseconds: %+v %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"every":"soon"}`), &back); err == nil {
		t.Fatal("a bad duration was read")
	}
	at := time.Unix(1, 0)
	rt, _ := json.Marshal(Runtime{RuntimeID: "rt_w.a", CreatedAt: at, UpdatedAt: at, StatusSince: at}) // no heartbeat yet
	if strings.Contains(string(rt), "0001-01-01") {
		t.Fatalf("runtime JSON writes an absent time: %s", rt)
	}
}
