package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diffAgent acknowledges each trigger the way a diff renderer (Ink, ratatui) may draw
// it: the marker's word, then a status line elsewhere, then the second half of the id
// in its place, then the first half: never ACK_TRIGGER:<id> as one run of output. It
// appends each line it reads to $1 (the prompts it was given).
const diffAgent = `
log=$1
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$log"
  id=$(printf '%s\n' "$line" | sed -n 's/.*\[BRIDGE_TRIGGER id=\([^ ]*\) .*/\1/p')
  [ -n "$id" ] || continue
  n=${#id}; h=$((n / 2))
  head=$(printf '%s' "$id" | cut -c1-$h)
  rest=$(printf '%s' "$id" | cut -c$((h + 1))-)
  printf '\033[2J\033[1;1HACK_TRIGGER:'
  printf '\033[3;1H* Working (1s)'
  sleep 0.2
  printf '\033[1;%dH%s' $((13 + h)) "$rest"
  printf '\033[3;1H* Working (2s)'
  sleep 0.2
  printf '\033[1;13H%s\033[5;1H' "$head"
done
`

// Issue 12 item 9: an ack on screen is never missed, and a prompt is never given twice to
// an agent that answered. The agent draws the marker in pieces; nudge finds it on the
// screen before any retry: acked by marker, one attempt, the prompt read once.
func TestAckMarkerDrawnInPiecesIsFoundOnScreen(t *testing.T) {
	td, _ := ackSetup(t, nil)
	script := filepath.Join(td.cfg.Panes.Roots[0], "diff.sh")
	log := filepath.Join(td.cfg.Panes.Roots[0], "diff.log")
	if err := os.WriteFile(script, []byte(diffAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	var rt runtimeView
	body := spawnBody{Workspace: "w1", Role: "ink", Agent: "fake", Dir: td.cfg.Panes.Roots[0], SessionID: "sess-ink",
		Argv: []string{"sh", script, log}}
	if err := td.c.do(t0(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" })
	for _, id := range []string{"trg_diff_0001", "trg_diff_0002"} {
		if _, err := td.trigger(map[string]any{"trigger_id": id, "workspace": "w1", "agent": "ink",
			"prompt": "answer " + id}); err != nil {
			t.Fatal(err)
		}
		got := td.waitTrigger(id, closed)
		story := events(td.audit(id))
		if got.State != "acked" || got.AckSignal != "marker" || got.Attempts != 1 || strings.Contains(story, "trigger_retry") {
			b, _ := os.ReadFile(log)
			t.Fatalf("%s: receipt %+v\nstory %s\nthe agent read:\n%s", id, got, story, b)
		}
		b, _ := os.ReadFile(log)
		if n := strings.Count(string(b), "[BRIDGE_TRIGGER id="+id+" "); n != 1 {
			t.Fatalf("%s: the agent was given the prompt %d times:\n%s", id, n, b)
		}
	}
}
