package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// commandPaths lists every command of the tree as its words after "nudge".
func commandPaths(c *cobra.Command, prefix []string, out *[][]string) {
	for _, sub := range c.Commands() {
		p := append(slices.Clone(prefix), sub.Name())
		*out = append(*out, p)
		commandPaths(sub, p, out)
	}
}

// TestHelpOnEveryCommand: --help, -h and `nudge help CMD` print the command's usage on
// stdout and exit 0, for every command and subcommand of the tree.
func TestHelpOnEveryCommand(t *testing.T) {
	var paths [][]string
	commandPaths(newRootCmd(&cliEnv{getenv: os.Getenv}), nil, &paths)
	paths = append(paths, nil)
	for _, want := range [][]string{{"schedule"}, {"schedule", "add"}, {"token"}, {"token", "issue"}, {"serve"},
		{"trigger"}, {"tail"}, {"completion", "zsh"}} {
		if !slices.ContainsFunc(paths, func(p []string) bool { return slices.Equal(p, want) }) {
			t.Fatalf("no command %q in the tree", want)
		}
	}
	env := map[string]string{}
	for _, p := range paths {
		for _, args := range [][]string{append(slices.Clone(p), "--help"), append(slices.Clone(p), "-h"), append([]string{"help"}, p...)} {
			out, errOut, code := runWithEnv(env, args...)
			if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
				t.Errorf("nudge %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, firstLine(out), errOut)
			}
		}
	}
	if out, _, _ := runWithEnv(env, "serve", "--help"); !strings.Contains(out, "--quiet-window") || strings.Contains(out, "cpuprofile") {
		t.Errorf("serve --help lists its flags, not the hidden ones:\n%s", out)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestUsageErrorsExit2: a wrong command line exits 2 and says where the usage is; a
// command that ran and failed exits 1.
func TestUsageErrorsExit2(t *testing.T) {
	env := map[string]string{"NUDGE_SOCKET": filepath.Join(t.TempDir(), "absent.sock")}
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"trgger", "x"},
		{"trigger"},
		{"trigger", "--workspace", "w", "--agent", "a"},
		{"trigger", "--workspace", "w", "--agent", "a", "one", "two"},
		{"trigger", "--bogus", "x"},
		{"trigger", "--ack-timeout", "soon", "--workspace", "w", "--agent", "a", "x"},
		{"tail"},
		{"tail", "rt_w.a", "--lines", "0"},
		{"pause"},
		{"force", "t1"},
		{"ls", "extra"},
		{"ls", "-o", "yaml"},
		{"schedule"},
		{"schedule", "bogus"},
		{"schedule", "add", "--workspace", "w", "--agent", "a"},
		{"token"},
		{"token", "issue"},
		{"unblock", "th", "--workspace", "w"},
		{"serve", "extra"},
		{"serve", "--log-format", "xml"},
		{"help", "bogus"},
		{"bogus", "--help"},
		{"--help", "bogus"},
		{"bogus", "-h"},
		{"schedule", "bogus", "--help"},
		{"token", "bogus", "-h"},
	} {
		out, errOut, code := runWithEnv(env, args...)
		if len(args) == 0 && code == 2 && strings.Contains(out, "Usage:") {
			continue // nudge alone prints its usage
		}
		if code != 2 || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("nudge %s: exit %d, stderr %q; want 2 and a pointer to --help", strings.Join(args, " "), code, errOut)
		}
	}
	if _, errOut, _ := runWithEnv(env, "trgger", "x"); !strings.Contains(errOut, "did you mean trigger") {
		t.Errorf("a misspelt command gets no suggestion: %q", errOut)
	}
	_, errOut, code := runWithEnv(env, "tail", "rt_w.a", "--lines", "5")
	if code != 1 || !strings.Contains(errOut, "cannot reach the daemon at "+env["NUDGE_SOCKET"]+": is `nudge serve` running?") {
		t.Errorf("no daemon: exit %d, %q", code, errOut)
	}
}

// TestFlagsFromEnvironmentAndGoStyle: a flag not given is read from NUDGE_<FLAG>, one
// given wins over it, a bad value there is a usage error naming the variable, and -name
// still means --name.
func TestFlagsFromEnvironmentAndGoStyle(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	dir := t.TempDir()
	env := map[string]string{"NUDGE_STATE_DIR": dir}
	_, errOut, code := runWithEnv(env, "ls")
	if code != 1 || !strings.Contains(errOut, filepath.Join(dir, "nudge.sock")) {
		t.Fatalf("NUDGE_STATE_DIR: exit %d, %q", code, errOut)
	}
	other := t.TempDir()
	if _, errOut, _ := runWithEnv(env, "ls", "--state-dir", other); !strings.Contains(errOut, filepath.Join(other, "nudge.sock")) {
		t.Fatalf("--state-dir does not win over NUDGE_STATE_DIR: %q", errOut)
	}
	env["NUDGE_LINES"] = "many"
	if _, errOut, code := runWithEnv(env, "tail", "rt_w.a"); code != 2 || !strings.Contains(errOut, "NUDGE_LINES") {
		t.Fatalf("a bad NUDGE_LINES: exit %d, %q", code, errOut)
	}
	delete(env, "NUDGE_LINES")
	// serve too: NUDGE_LOG_FORMAT reaches --log-format (checked before anything starts).
	if _, errOut, code := runWithEnv(map[string]string{"NUDGE_LOG_FORMAT": "xml"}, "serve"); code != 2 || !strings.Contains(errOut, "--log-format") {
		t.Fatalf("serve with NUDGE_LOG_FORMAT=xml: exit %d, %q", code, errOut)
	}
	if _, errOut, code := runWithEnv(env, "ls", "-json", "-workspace", "w"); code != 1 || !strings.Contains(errOut, "cannot reach the daemon") {
		t.Fatalf("Go-style -json -workspace: exit %d, %q", code, errOut)
	}
	root := newRootCmd(&cliEnv{getenv: os.Getenv})
	for _, tt := range []struct{ in, want string }{
		{"ls -json -workspace w", "ls --json --workspace w"},
		{"pause rt_w.a --reason -json", "pause rt_w.a --reason -json"},
		{"pause rt_w.a -reason -json", "pause rt_w.a --reason -json"},
		{"tail rt_w.a -lines=5 -o json", "tail rt_w.a --lines=5 -o json"},
		{"trigger -workspace w -agent a -- -json", "trigger --workspace w --agent a -- -json"},
	} {
		if got := strings.Join(singleDashLong(root, strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("singleDashLong(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCompletionScripts: `nudge completion SHELL` prints a script for that shell that
// knows nudge's commands.
func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_nudge", "zsh": "#compdef nudge", "fish": "complete -c nudge"} {
		out, errOut, code := runWithEnv(nil, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) || errOut != "" {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
	}
	// The script asks the binary; the binary answers with the subcommands and flags.
	out, _, code := runWithEnv(nil, "__complete", "sched")
	if code != 0 || !strings.Contains(out, "schedule") {
		t.Errorf("__complete sched: %d %q", code, out)
	}
	out, _, _ = runWithEnv(nil, "__complete", "trigger", "--wa")
	if !strings.Contains(out, "--wait") || !strings.Contains(out, "--wait-timeout") {
		t.Errorf("__complete trigger --wa: %q", out)
	}
}

// TestOutputFormats: -o json and --json print the records as package api defines them,
// -o table a table, on every command that prints records.
func TestOutputFormats(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "sh")
	decode := func(args []string, v any) {
		t.Helper()
		out, errOut, code := td.runCLI(args...)
		if code != 0 {
			t.Fatalf("nudge %s: %d %s", strings.Join(args, " "), code, errOut)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("nudge %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var rts []api.Runtime
	decode([]string{"ls", "-o", "json"}, &rts)
	if len(rts) != 1 || rts[0].RuntimeID != rt.RuntimeID {
		t.Fatalf("ls -o json: %+v", rts)
	}
	var again []api.Runtime
	decode([]string{"ls", "--json"}, &again)
	if len(again) != 1 || again[0].RuntimeID != rt.RuntimeID {
		t.Fatalf("ls --json: %+v", again)
	}
	var tr api.Trigger
	decode([]string{"trigger", "--workspace", "w1", "--agent", "sh", "echo formats", "--id", "fmt-1", "--wait"}, &tr)
	if tr.TriggerID != "fmt-1" || !tr.Closed {
		t.Fatalf("trigger --wait: %+v", tr)
	}
	// -- ends the flags: a prompt may start with a dash.
	decode([]string{"trigger", "--workspace", "w1", "--agent", "sh", "--id", "fmt-2", "--", "-n is a flag of echo"}, &tr)
	if tr.TriggerID != "fmt-2" || tr.Prompt != "-n is a flag of echo" {
		t.Fatalf("trigger -- PROMPT: %+v", tr)
	}
	var recs []api.AuditRecord
	decode([]string{"audit", "--trigger", "fmt-1", "-o", "json"}, &recs)
	if len(recs) == 0 {
		t.Fatal("audit -o json: no records")
	}
	var paused api.Runtime
	decode([]string{"pause", rt.RuntimeID, "--reason", "formats"}, &paused)
	if !paused.Paused {
		t.Fatalf("pause: %+v", paused)
	}
	var tail struct {
		Tail    api.Tail          `json:"tail"`
		History []api.AuditRecord `json:"history"`
	}
	decode([]string{"tail", rt.RuntimeID, "-o", "json", "--lines", "5"}, &tail)
	if tail.Tail.RuntimeID != rt.RuntimeID {
		t.Fatalf("tail -o json: %+v", tail)
	}
	for args, head := range map[string]string{
		"ls -o table":                          "RUNTIME",
		"status -o table":                      "WORKSPACE",
		"receipt fmt-1 -o table":               "TRIGGER",
		"resume " + rt.RuntimeID + " -o table": "resumed " + rt.RuntimeID, // an acting command's line
		"schedule ls -o table":                 "SCHEDULE",
		"audit --trigger fmt-1":                "trigger_received",
	} {
		out, errOut, code := td.runCLI(strings.Fields(args)...)
		if code != 0 || !strings.Contains(out, head) || strings.HasPrefix(out, "{") || strings.HasPrefix(out, "[") {
			t.Errorf("nudge %s: exit %d, %q %q", args, code, out, errOut)
		}
	}
	if _, errOut, code := td.runCLI("ls", "--token", "hunter2"); code != 1 || !strings.Contains(errOut, "UNAUTHORIZED") || !strings.Contains(errOut, "NUDGE_TOKEN") {
		t.Errorf("a bad token: exit %d, %q; want 1 and what to do", code, errOut)
	}
	var rows []statusRow
	decode([]string{"status", "-o", "json"}, &rows)
	if len(rows) != 1 || rows[0].LastTrigger == nil || rows[0].State == "" {
		t.Fatalf("status -o json: %+v", rows)
	}
}

// TestCompletionAsksTheDaemon: arguments and flag values complete from the daemon
// (runtime ids, workspaces, roles, trigger ids) and from the embedded profiles.
func TestCompletionAsksTheDaemon(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("w1", "sh")
	for args, want := range map[string]string{
		"__complete tail ":                           rt.RuntimeID,
		"__complete pause --reason x ":               rt.RuntimeID,
		"__complete attach ":                         "w1",
		"__complete trigger --workspace ":            "w1",
		"__complete trigger --workspace w1 --agent ": "sh",
		"__complete spawn --agent ":                  "codex",
		"__complete ls -o ":                          "table",
	} {
		words := strings.Split(args, " ") // the last word is what is being completed
		out, _, code := td.runCLI(words...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("nudge %s: %d %q, want %q", args, code, out, want)
		}
	}
	if out, _, _ := td.runCLI("__complete", "tail", rt.RuntimeID, ""); strings.Contains(out, rt.RuntimeID) {
		t.Errorf("tail takes one RUNTIME_ID, yet a second is offered: %q", out)
	}
}

// TestAPIRecordsDecodeTheWireGoldens: the records package api added for the CLI decode
// the daemon's pinned answers (testdata/wire) with no field unknown and encode back to
// the same keys, so a command printing one shows every field the daemon sent.
func TestAPIRecordsDecodeTheWireGoldens(t *testing.T) {
	placeholder := regexp.MustCompile(`<n>|"<time>"`)
	for file, v := range map[string]any{
		"27_heartbeat.txt":       &api.HeartbeatReply{},
		"39_unblock.txt":         &api.Unblocked{},
		"47_schedule_remove.txt": &api.ScheduleRemoved{},
		"49_token_issue.txt":     &api.IssuedToken{},
		"55_tokens.txt":          &[]api.TokenInfo{},
		"56_token_revoke.txt":    &api.TokenInfo{},
		"59_token_rotate.txt":    &api.KeyRotated{},
		"61_deregister.txt":      &api.Deregistered{},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "wire", file))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(b), "\n") // the request line
		_, body, _ = strings.Cut(body, "\n")       // the status line
		body = placeholder.ReplaceAllStringFunc(body, func(p string) string {
			if p == "<n>" {
				return "1"
			}
			return `"2026-01-02T03:04:05Z"`
		})
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Errorf("%s: %v\n%s", file, err, body)
			continue
		}
		again, _ := json.Marshal(v)
		var want, got any
		json.Unmarshal([]byte(body), &want)
		json.Unmarshal(again, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: does not round-trip:\nwire %s\napi  %s", file, body, again)
		}
	}
}

// TestBashCompletionEndToEnd: the script `nudge completion bash` prints, sourced in a real
// bash, completes commands, flags and flag values by asking the binary. (The script wants
// the bash-completion package's _get_comp_words_by_ref; a minimal one stands in for it.)
func TestBashCompletionEndToEnd(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := buildWatchBinary(t)
	script := `
_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(nudge completion bash)
c() { COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); __start_nudge 2>/dev/null; echo "${COMPREPLY[*]}"; }
c nudge sched
c nudge trigger --wa
c nudge spawn --agent ""
c nudge ls -o ""
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NUDGE_SOCKET="+filepath.Join(t.TempDir(), "absent.sock"), "XDG_CONFIG_HOME="+t.TempDir()) // the embedded profiles only
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := []string{"schedule", "--wait --wait-for --wait-timeout", "claude codex demo gemini opencode pi shell", "json table"}
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if !slices.Equal(got, want) {
		t.Fatalf("bash completion:\ngot  %q\nwant %q", got, want)
	}
}

// TestEveryOldFlagStays: each command keeps every flag the hand-written parser had (the
// list is what `nudge CMD --help` showed before the move to cobra), and its defaults
// (a few, spot-checked).
func TestEveryOldFlagStays(t *testing.T) {
	old := map[string]string{
		"serve":            "ack-backoff ack-retries ack-timeout allow-uid api-token api-token-file bind-keys breaker-cooldown breaker-failures cpuprofile crash-loop crash-window defer-recheck echo-timeout host launch-grace log-format log-level loop-repeats loop-turns max-defer max-hold max-prompt metrics-addr orchestrator pack-dir policy profile-dir quiet-window rate-limit require-token resume-attempts root runtime-token-ttl schedule-gap schedule-min-every shutdown-timeout socket ssh ssh-config stale-after start-timeout state-dir status-line store-check-timeout submit-quiet submit-timeout sweep tmux tmux-config tmux-socket tmux-socket-path trace",
		"spawn":            "agent agent-id dir host prompt-file role session-id socket state-dir token workspace",
		"register":         "agent agent-id host role session-id socket state-dir target token unmanaged workspace",
		"trigger":          "ack-timeout agent force id intent reason socket state-dir thread token wait wait-timeout workspace",
		"receipt":          "socket state-dir token wait",
		"ack":              "socket state-dir token",
		"heartbeat":        "cursor session-id socket state-dir status thread token",
		"ls":               "json socket state-dir token workspace",
		"status":           "json short socket state-dir token workspace",
		"tail":             "history json lines socket state-dir token",
		"audit":            "json runtime since socket state-dir thread token trigger until verify workspace",
		"pause":            "reason socket state-dir token",
		"resume":           "reason socket state-dir token",
		"stop":             "reason socket state-dir token",
		"restart":          "reason socket state-dir token",
		"force":            "intent reason socket state-dir token",
		"unblock":          "agent reason socket state-dir token workspace",
		"deregister":       "reason socket state-dir token",
		"watch":            "socket state-dir tmux tmux-socket tmux-socket-path token",
		"attach":           "host read-only ssh ssh-config tmux tmux-socket tmux-socket-path",
		"switch":           "socket state-dir tmux tmux-socket tmux-socket-path token",
		"mcp":              "socket state-dir token",
		"doctor":           "host socket ssh ssh-config state-dir tmux tmux-socket tmux-socket-path token",
		"schedule add":     "agent every socket state-dir token workspace",
		"schedule ls":      "socket state-dir token",
		"schedule rm":      "socket state-dir token",
		"token issue":      "json socket state-dir subject token ttl verbs workspace",
		"token list":       "json socket state-dir token",
		"token revoke":     "json socket state-dir token",
		"token rotate-key": "json socket state-dir token",
	}
	root := newRootCmd(&cliEnv{getenv: os.Getenv})
	for path, flags := range old {
		cmd, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) > 0 {
			t.Errorf("nudge %s: gone (%v)", path, err)
			continue
		}
		for _, f := range strings.Fields(flags) {
			if cmd.Flags().Lookup(f) == nil && cmd.InheritedFlags().Lookup(f) == nil {
				t.Errorf("nudge %s: flag --%s is gone", path, f)
			}
		}
	}
	for _, tt := range []struct{ path, flag, want string }{
		{"spawn", "agent", "codex"}, {"trigger", "wait-timeout", "2m0s"}, {"tail", "lines", "40"},
		{"tail", "history", "20"}, {"heartbeat", "status", "active"}, {"force", "intent", "human_override"},
		{"schedule add", "every", "10m"}, {"token issue", "ttl", "24h0m0s"}, {"serve", "rate-limit", "10/min"},
		{"serve", "ack-backoff", "2s,4s"}, {"serve", "quiet-window", "20s"}, {"serve", "tmux-socket", "nudge"},
	} {
		cmd, _, _ := root.Find(strings.Fields(tt.path))
		if f := cmd.Flags().Lookup(tt.flag); f == nil || f.DefValue != tt.want {
			t.Errorf("nudge %s --%s: default %v, want %q", tt.path, tt.flag, f, tt.want)
		}
	}
}
