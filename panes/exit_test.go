package panes

import (
	"strings"
	"testing"
)

func TestMarkerScan(t *testing.T) {
	cases := []struct {
		chunks []string
		want   bool
	}{
		{[]string{"working\r\n__TASK_DONE__\r\n"}, true},
		{[]string{"work\r\n__TASK_", "DONE__\r\n$ "}, true},               // split across chunks
		{[]string{"\x1b[32m__TASK_DONE__\x1b[0m\r\n"}, true},              // coloured
		{[]string{"  __TASK_DONE__  "}, true},                             // last line, no newline yet
		{[]string{"$ echo __TASK_DONE__\r\n"}, false},                     // the command line, not the marker
		{[]string{"the marker __TASK_DONE__ in a sentence\r\n"}, false},   // prose
		{[]string{strings.Repeat("x", 600) + "__TASK_DONE__\r\n"}, false}, // a long line is cut, not matched
	}
	for i, c := range cases {
		var m markerScan
		m.watch(paneKey{server{}, 3}, "__TASK_DONE__")
		for _, ch := range c.chunks {
			m.feed(paneKey{server{}, 3}, []byte(ch))
		}
		if got := m.seen(paneKey{server{}, 3}); got != c.want {
			t.Errorf("#%d: got %v, want %v", i, got, c.want)
		}
		if m.seen(paneKey{server{}, 4}) || m.seen(paneKey{server{host: "box"}, 3}) {
			t.Errorf("#%d: another pane saw it", i)
		}
	}
}

func TestProfileLifecycleFields(t *testing.T) {
	p, err := ParseProfile("x", []byte(`{"launch":["x"],"ready_on":"readiness","start_timeout":"30s",
		"resume_interactive":["x","resume","{session_id}"],"done_marker":" DONE ","restart_on_exit":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.ReadyOn != ReadyOnReadiness || p.StartTimeout.String() != "30s" || p.DoneMarker != "DONE" || !p.RestartOnExit {
		t.Fatalf("got %+v", p)
	}
	if got := strings.Join(p.ResumeInteractiveArgv("abc-1"), " "); got != "x resume abc-1" {
		t.Errorf("resume argv %q", got)
	}
	if p.ResumeInteractiveArgv("--last") != nil || p.ResumeInteractiveArgv("") != nil {
		t.Error("an invalid session id went into the resume argv")
	}
	if d, _ := ParseProfile("y", []byte(`{"launch":["y"]}`)); d.ReadyOn != ReadyOnAlive {
		t.Errorf("default ready_on %q", d.ReadyOn)
	}
	for i, bad := range []string{
		`{"launch":["x"],"ready_on":"soon"}`,
		`{"launch":["x"],"resume_interactive":["x","resume"]}`,
		`{"launch":["x"],"start_timeout":"-1s"}`,
	} {
		if _, err := ParseProfile("x", []byte(bad)); err == nil {
			t.Errorf("#%d: %s accepted", i, bad)
		}
	}
	codex := defaults(t)["codex"]
	if !codex.IsResume([]string{"codex", "resume", "id", "prompt"}) || codex.IsResume([]string{"codex", "prompt"}) {
		t.Error("IsResume")
	}
}

func TestDeadSignalLine(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		n     int
		ok    bool
	}{
		{[]string{"$ sleep 100", "", "Pane is dead (signal 9, Wed Nov 25 03:51:01 2026)", "", ""}, 9, true},
		{[]string{"Pane is dead (signal 15, Wed Nov 25 03:51:01 2026)"}, 15, true},
		{[]string{"Pane is dead (status 1, Wed Nov 25 03:51:01 2026)"}, 0, false},
		{[]string{"Pane is dead (signal 9, x)", "output after it"}, 0, false},
		{[]string{"Pane is dead (signal KILL, x)"}, 0, false},
		{nil, 0, false},
	} {
		if n, ok := deadSignal(tc.lines); n != tc.n || ok != tc.ok {
			t.Errorf("deadSignal(%q) = %d, %v; want %d, %v", tc.lines, n, ok, tc.n, tc.ok)
		}
	}
}
