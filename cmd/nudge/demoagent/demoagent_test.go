package demoagent

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/ack/record"
)

// TestRunWritesRecordNudgeReads: the demo agent's session record, read by the "demo"
// record reader, shows each prompt (the envelope whole, so it acks its trigger), its turn
// and its reply; a prompt that asks shows the dialog and takes the answer.
func TestRunWritesRecordNudgeReads(t *testing.T) {
	dir := t.TempDir()
	in := "[BRIDGE_TRIGGER id=t-1 thread=- reason=trigger] hello [/BRIDGE_TRIGGER]\n" +
		"[BRIDGE_TRIGGER id=t-2 thread=- reason=trigger]\nplease ask first\n[/BRIDGE_TRIGGER]\n2\n"
	var out bytes.Buffer
	if err := Run(Config{SessionID: "s-1", Dir: dir, Work: time.Millisecond, In: strings.NewReader(in), Out: &out}); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("Run: %v", err)
	}
	for _, want := range []string{"› ", "Do you want to run this command?", "● Done. You said: \"hello\"", "● Denied"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("screen lacks %q:\n%s", want, out.String())
		}
	}
	f := record.Demo{}
	spec := record.Spec{Dir: dir, SessionID: "s-1"}
	path, err := f.Locate(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || filepath.Dir(path) != filepath.Join(dir, RecordDir) {
		t.Fatalf("%s: %v", path, err)
	}
	var st record.State
	var evs []record.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		st.Line++
		if evs, err = f.Parse(evs, &st, sc.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind.String())
	}
	want := "session user turn_started assistant turn_ended user turn_started assistant turn_ended"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if !strings.Contains(evs[5].Text, "[BRIDGE_TRIGGER id=t-2") || !strings.HasPrefix(evs[7].Text, "Denied") {
		t.Errorf("prompt %q, reply %q", evs[5].Text, evs[7].Text)
	}
}
