package store

import (
	"errors"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

func TestRuntimes(t *testing.T) {
	db := open(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := []nudge.Runtime{
		{RuntimeID: "rt-b", Role: "reviewer", CreatedAt: t0.Add(2 * time.Second), Argv: []string{"codex"}},
		{RuntimeID: "rt-a", Role: "executioner", CreatedAt: t0.Add(time.Second)},
		{RuntimeID: "rt-c", Role: "planner", CreatedAt: t0.Add(time.Second)},
	}
	for _, r := range rs {
		if err := db.Runtimes().PutRuntime(r); err != nil {
			t.Fatal(err)
		}
	}
	list, err := db.Runtimes().ListRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rt-a", "rt-c", "rt-b"} // CreatedAt, then id
	if len(list) != len(want) {
		t.Fatalf("ListRuntimes returned %d, want %d", len(list), len(want))
	}
	for i, r := range list {
		if r.RuntimeID != want[i] {
			t.Errorf("#%d: got %q, want %q", i, r.RuntimeID, want[i])
		}
	}
	got, err := db.Runtimes().GetRuntime("rt-b")
	if err != nil || got.Role != "reviewer" || len(got.Argv) != 1 || got.Argv[0] != "codex" {
		t.Errorf("GetRuntime = %+v, %v", got, err)
	}

	// A put with zero CreatedAt keeps the stored one.
	if err := db.Runtimes().PutRuntime(nudge.Runtime{RuntimeID: "rt-b", Role: "reviewer", Status: "ready"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Runtimes().GetRuntime("rt-b"); !got.CreatedAt.Equal(t0.Add(2*time.Second)) || got.Status != "ready" {
		t.Errorf("after re-put: CreatedAt %v status %q", got.CreatedAt, got.Status)
	}
	if err := db.Runtimes().CreateRuntime(nudge.Runtime{RuntimeID: "rt-a"}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateRuntime of existing id: %v, want ErrExists", err)
	}
	if err := db.Runtimes().CreateRuntime(nudge.Runtime{RuntimeID: "rt-new"}); err != nil {
		t.Errorf("CreateRuntime: %v", err)
	}
	if got, _ := db.Runtimes().GetRuntime("rt-new"); got.CreatedAt.IsZero() {
		t.Error("new runtime got zero CreatedAt")
	}

	if err := db.Runtimes().DeleteRuntime("rt-a"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"GetDeleted", func() error { _, err := db.Runtimes().GetRuntime("rt-a"); return err }(), ErrNotFound},
		{"DeleteAgain", db.Runtimes().DeleteRuntime("rt-a"), ErrNotFound},
		{"PutEmptyID", db.Runtimes().PutRuntime(nudge.Runtime{}), ErrInvalid},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

func TestSchedules(t *testing.T) {
	db := open(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"s1", "s2", "s3"} {
		s := nudge.Schedule{ScheduleID: id, Every: time.Minute, NextAt: t0.Add(time.Duration(3-i) * time.Hour)}
		if err := db.Schedules().PutSchedule(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Schedules().DeleteSchedule("s2"); err != nil {
		t.Fatal(err)
	}
	if err := db.Schedules().DeleteSchedule("s2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteSchedule twice: %v, want ErrNotFound", err)
	}
	list, err := db.Schedules().ListSchedules()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ScheduleID != "s3" || list[1].ScheduleID != "s1" {
		t.Fatalf("ListSchedules = %+v, want s3 then s1 (by NextAt)", list)
	}
	if list[0].Every != time.Minute || list[0].CreatedAt.IsZero() {
		t.Errorf("schedule not round-tripped: %+v", list[0])
	}
}

func TestMeta(t *testing.T) {
	db := open(t)
	if _, err := db.Meta().GetMeta("k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetMeta missing: %v, want ErrNotFound", err)
	}
	if err := db.Meta().PutMeta("k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	v, err := db.Meta().GetMeta("k")
	if err != nil || string(v) != "v1" {
		t.Fatalf("GetMeta = %q, %v", v, err)
	}
	v[0] = 'X' // the caller owns the copy
	if v2, _ := db.Meta().GetMeta("k"); string(v2) != "v1" {
		t.Errorf("stored value changed through the returned slice: %q", v2)
	}
	if err := db.Meta().PutMeta("empty", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Meta().GetMeta("empty"); err != nil || v == nil || len(v) != 0 {
		t.Errorf("GetMeta(empty) = %q (nil %v), %v; want empty non-nil", v, v == nil, err)
	}
	for _, key := range []string{"", "\x00audit_head"} {
		if err := db.Meta().PutMeta(key, []byte("x")); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutMeta(%q): %v, want ErrInvalid", key, err)
		}
	}
	if err := db.Meta().DeleteMeta("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Meta().GetMeta("k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetMeta after delete: %v, want ErrNotFound", err)
	}
}
