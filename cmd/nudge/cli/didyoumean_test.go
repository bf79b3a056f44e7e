package cli

import (
	"strings"
	"testing"
)

// TestUnknownNamesRefusedWithSuggestion: a typo in a name is refused before anything is
// stored, with what was meant: `spawn --agent codx` (did you mean codex), `trigger
// --agent reveiwer` (no receipt is stored: it failed as UNMANAGED_RUNTIME and was kept),
// `--workspace` typos, and a runtime id a typo away wherever one is taken.
func TestUnknownNamesRefusedWithSuggestion(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("mobile_core", "reviewer")

	if _, errOut, code := td.runCLI("spawn", "--workspace", "mobile_core", "--role", "other", "--agent", "codx"); code != 1 || !strings.Contains(errOut, "did you mean codex?") {
		t.Errorf("spawn --agent codx: %d %q", code, errOut)
	}
	for _, args := range [][]string{
		{"--workspace", "mobile_core", "--agent", "reveiwer"},
		{"--workspace", "mobile_cor", "--agent", "reviewer"},
	} {
		out, errOut, code := td.runCLI(append(append([]string{"trigger"}, args...), "--id", "typo-"+args[1], "hello")...)
		if code != 1 || out != "" || !strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, "nothing was sent") {
			t.Errorf("trigger %v: %d %q %q", args, code, out, errOut)
		}
		if _, _, code := td.runCLI("receipt", "typo-"+args[1]); code != 1 {
			t.Errorf("trigger %v stored a receipt", args)
		}
	}
	for _, cmd := range [][]string{{"pause", "rt_mobile_core.reveiwer"}, {"tail", "rt_mobile_core.reviewr"}, {"stop", "rt_mobilecore.reviewer"}} {
		if _, errOut, code := td.runCLI(cmd...); code != 1 || !strings.Contains(errOut, "did you mean "+rt.RuntimeID+"?") {
			t.Errorf("%v: %d %q", cmd, code, errOut)
		}
	}

	// A token of another workspace is told nothing of this one's runtimes: no suggestion,
	// the same answer as for an id that does not exist.
	td.spawnShell("other", "reviewer")
	tok := td.issue(t, "--subject", "other-ws", "--workspace", "other", "--verbs", "read,trigger,admin", "--ttl", "1h")
	_, errOut, code := td.runCLI("pause", "rt_mobile_core.reveiwer", "--token", tok)
	_, errNone, _ := td.runCLI("pause", "rt_nothing_near.zzzzzzzz", "--token", tok)
	if code != 1 || strings.Contains(errOut, "mobile_core.reviewer") || strings.Contains(errOut, "did you mean") ||
		strings.Replace(errOut, "rt_mobile_core.reveiwer", "X", 1) != strings.Replace(errNone, "rt_nothing_near.zzzzzzzz", "X", 1) {
		t.Errorf("another workspace's token: %d %q (an unknown id: %q)", code, errOut, errNone)
	}
	if out, errOut, code := td.runCLI("trigger", "--workspace", "mobile_core", "--agent", "reveiwer", "--id", "typo-tok", "--token", tok, "hi"); strings.Contains(out+errOut, "did you mean") {
		t.Errorf("trigger with another workspace's token: %d %q %q", code, out, errOut)
	}
}
