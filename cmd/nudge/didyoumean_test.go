package main

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
}
