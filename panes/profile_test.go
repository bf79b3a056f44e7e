package panes

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func defaults(t *testing.T) map[string]Profile {
	t.Helper()
	ps, err := LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestLoadProfiles_Defaults(t *testing.T) {
	ps := defaults(t)
	for _, name := range []string{"codex", "claude", "opencode", "gemini", "pi", "shell", "demo"} {
		p, ok := ps[name]
		if !ok {
			t.Fatalf("missing default profile %q", name)
		}
		if p.Name != name || p.Pack != name || len(p.Launch) == 0 {
			t.Errorf("%s: got name %q pack %q launch %q", name, p.Name, p.Pack, p.Launch)
		}
	}
	if got := ps["codex"].SubmitSettle; got != 150*time.Millisecond {
		t.Errorf("codex settle: got %v, want 150ms", got)
	}
	if ps["shell"].SubmitSettle != 0 || !ps["shell"].SubmittedIsAck {
		t.Errorf("shell: got settle %v submittedIsAck %v", ps["shell"].SubmitSettle, ps["shell"].SubmittedIsAck)
	}
	if ps["pi"].CanResume() || ps["shell"].CanResume() || !ps["codex"].CanResume() {
		t.Error("resume capability wrong")
	}
	// Gemini CLI reads a large paste silently for seconds, tens of seconds loaded.
	if g, c := ps["gemini"].Intake(), ps["codex"].Intake(); g != 2*time.Minute || c != DefaultIntakeTimeout {
		t.Errorf("intake windows: gemini %v, codex %v", g, c)
	}
	if _, err := ParseProfile("bad", []byte(`{"launch":["x"],"intake_timeout":"-1s"}`)); err == nil || !strings.Contains(err.Error(), "intake_timeout") {
		t.Errorf("a negative intake_timeout: %v", err)
	}
}

func TestLoadProfiles_UserOverride(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("shell.json", `{"launch":["zsh"],"allowed_launchers":["zsh","sleep"],"submit_settle":"20ms","env":{"FOO":"bar"}}`)
	write("mine.json", `{"name":"mine","launch":["mytool","--x"]}`)
	write("notes.txt", `ignored`)
	ps, err := LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	sh := ps["shell"]
	if !slices.Equal(sh.Launch, []string{"zsh"}) || sh.SubmitSettle != 20*time.Millisecond || sh.SubmittedIsAck {
		t.Errorf("override not applied wholesale: %+v", sh)
	}
	if !slices.Equal(sh.Env, []string{"FOO=bar"}) {
		t.Errorf("env: got %q", sh.Env)
	}
	if _, err := sh.LaunchArgv([]string{"sleep", "10"}, ""); err != nil {
		t.Errorf("sleep allowed by override: %v", err)
	}
	if _, err := sh.LaunchArgv([]string{"bash"}, ""); !errors.Is(err, ErrLauncherNotAllowed) {
		t.Errorf("bash after override: got %v, want ErrLauncherNotAllowed", err)
	}
	mine := ps["mine"]
	if mine.Pack != "mine" || !slices.Equal(mine.AllowedLaunchers, []string{"mytool"}) {
		t.Errorf("mine: got %+v", mine)
	}
	if _, ok := ps["codex"]; !ok {
		t.Error("codex default lost")
	}
	if want := filepath.Join(dir, "shell.json"); sh.Source != want || ps["codex"].Source != "" {
		t.Errorf("sources: shell %q (want %q), codex %q (want the embedded default)", sh.Source, want, ps["codex"].Source)
	}
}

// A broken override directory stops the load with an error that names the path: the
// daemon must not start with a profile silently left at its default.
func TestLoadProfiles_Errors(t *testing.T) {
	t.Run("ErrMalformedFile", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "codex.json"), []byte(`{"launch":`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProfiles(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "codex.json")) {
			t.Fatalf("got %v, want an error naming %s", err, filepath.Join(dir, "codex.json"))
		}
	})
	t.Run("ErrNotADirectory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "profiles")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadProfiles(file); err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ErrUnreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads any directory")
		}
		dir := filepath.Join(t.TempDir(), "profiles")
		if err := os.Mkdir(dir, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		if _, err := LoadProfiles(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("got %v, want an error naming %s", err, dir)
		}
	})
}

func TestLoadProfiles_MissingDir(t *testing.T) {
	ps, err := LoadProfiles(filepath.Join(t.TempDir(), "nope"))
	if err != nil || len(ps) != 7 { // codex claude opencode gemini pi shell demo
		t.Fatalf("got %d profiles, err %v", len(ps), err)
	}
}

func TestParseProfile_Errors(t *testing.T) {
	tests := []struct{ name, body string }{
		{"ErrNameMismatch", `{"name":"other","launch":["x"]}`},
		{"ErrNoLaunch", `{"launch":[]}`},
		{"ErrUnknownField", `{"launch":["x"],"bogus":1}`},
		{"ErrBadDuration", `{"launch":["x"],"submit_settle":"soon"}`},
		{"ErrNegativeDuration", `{"launch":["x"],"ready_quiet":"-1s"}`},
		{"ErrBadRegex", `{"launch":["x"],"session_id_pattern":"("}`},
		{"ErrNoGroup", `{"launch":["x"],"session_id_pattern":"id: \\S+"}`},
		{"ErrPromptArg", `{"launch":["x"],"prompt_arg":"sometimes"}`},
		{"ErrAckSignal", `{"launch":["x"],"ack_signals":["telepathy"]}`},
		{"ErrEnvKey", `{"launch":["x"],"env":{"A B":"c"}}`},
		{"ErrUnsetEnvKey", `{"launch":["x"],"unset_env":["A=B"]}`},
		{"ErrUnsetEnvAlsoSet", `{"launch":["x"],"env":{"CI":"1"},"unset_env":["CI"]}`},
		{"ErrJSON", `{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseProfile("p", []byte(tt.body)); err == nil {
				t.Errorf("got no error for %s", tt.body)
			}
		})
	}
	if _, err := ParseProfile("bad/name", []byte(`{"launch":["x"]}`)); err == nil {
		t.Error("bad name accepted")
	}
}

func TestResumeArgv(t *testing.T) {
	ps := defaults(t)
	tests := []struct {
		profile, id, prompt string
		want                []string
		err                 error
	}{
		{"codex", "0199a-b_c", "go on; rm -rf / $(x)", []string{"codex", "resume", "0199a-b_c", "go on; rm -rf / $(x)"}, nil},
		{"codex", "abc", "say {session_id}", []string{"codex", "resume", "abc", "say {session_id}"}, nil},
		{"claude", "s1", "continue\nplease", []string{"claude", "--resume", "s1", "continue\nplease"}, nil},
		// OpenCode resumes that very session (opencode run started a new one).
		{"opencode", "ses_01JAB", "Continue", []string{"opencode", "run", "--session", "ses_01JAB", "Continue"}, nil},
		{"opencode", "", "Continue", nil, ErrBadSessionID},
		{"codex", "", "x", nil, ErrBadSessionID},
		{"codex", "a b", "x", nil, ErrBadSessionID},
		{"codex", "--last", "x", nil, ErrBadSessionID},
		{"codex", "$(id)", "x", nil, ErrBadSessionID},
		{"pi", "abc", "x", nil, ErrNoResume},
		{"shell", "abc", "x", nil, ErrNoResume},
		{"gemini", "abc", "x", nil, ErrNoResume},
	}
	for i, tt := range tests {
		got, err := ps[tt.profile].ResumeArgv(tt.id, tt.prompt)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("#%d: got err %v, want %v", i, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("#%d: got %q, %v, want %q", i, got, err, tt.want)
		}
	}
}

func TestLaunchArgv(t *testing.T) {
	ps := defaults(t)
	tests := []struct {
		profile  string
		override []string
		prompt   string
		want     []string
		err      error
	}{
		{"codex", nil, "", []string{"codex"}, nil},
		{"codex", nil, "fix it; $(x)", []string{"codex", "fix it; $(x)"}, nil},
		{"opencode", nil, "hi", []string{"opencode", "--prompt", "hi"}, nil},
		{"gemini", nil, "hi", []string{"gemini", "--prompt-interactive", "hi"}, nil},
		{"codex", []string{"/usr/local/bin/codex", "--full-auto"}, "", []string{"/usr/local/bin/codex", "--full-auto"}, nil},
		{"codex", []string{"bash"}, "", nil, ErrLauncherNotAllowed},
		{"shell", []string{"sh", "-c", "exit 3"}, "", []string{"sh", "-c", "exit 3"}, nil},
		{"shell", []string{"cat"}, "", []string{"cat"}, nil},
		{"shell", []string{"python3"}, "", nil, ErrLauncherNotAllowed},
		{"shell", []string{"FOO=1"}, "", nil, ErrLauncherNotAllowed},
		{"shell", nil, "hi", nil, ErrNoPromptArg},
	}
	for i, tt := range tests {
		got, err := ps[tt.profile].LaunchArgv(tt.override, tt.prompt)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("#%d: got err %v, want %v", i, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("#%d: got %q, %v, want %q", i, got, err, tt.want)
		}
	}
	// The profile's own Launch slice is never aliased.
	p := ps["codex"]
	a, _ := p.LaunchArgv(nil, "x")
	a[0] = "changed"
	if p.Launch[0] != "codex" {
		t.Error("LaunchArgv aliased Launch")
	}
}

func TestFindSessionID(t *testing.T) {
	codex := defaults(t)["codex"]
	out := []byte("OpenAI Codex v0.40\n--------\nsession id: 0199a213-81c0-7800-8aa1-bbab2a035a53\n")
	if got := codex.FindSessionID(out); got != "0199a213-81c0-7800-8aa1-bbab2a035a53" {
		t.Errorf("got %q", got)
	}
	if got := codex.FindSessionID([]byte("no id here")); got != "" {
		t.Errorf("got %q, want none", got)
	}
	if got := defaults(t)["claude"].FindSessionID(out); got != "" {
		t.Errorf("claude has no pattern, got %q", got)
	}
}

// TestResumeLiveArgv: the fallback's resume never carries the prompt: the interactive
// template when the profile has one, else the resume template without its {prompt}.
func TestResumeLiveArgv(t *testing.T) {
	profs, err := LoadProfiles("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id string
		want     []string
	}{
		{"claude", "abc-1", []string{"claude", "--resume", "abc-1"}},
		{"codex", "abc-1", []string{"codex", "resume", "abc-1"}},
		{"opencode", "abc-1", []string{"opencode", "--session", "abc-1"}},
		{"claude", "--last", nil},
		{"shell", "abc-1", nil},
	} {
		if got := profs[tc.name].ResumeLiveArgv(tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("%s.ResumeLiveArgv(%q) = %q, want %q", tc.name, tc.id, got, tc.want)
		}
	}
	p := Profile{Name: "x", Launch: []string{"x"}, Resume: []string{"x", "resume", "{session_id}", "--msg={prompt}", "{prompt}"}}
	if got := p.ResumeLiveArgv("s1"); !slices.Equal(got, []string{"x", "resume", "s1"}) {
		t.Errorf("without resume_interactive: %q", got)
	}
	for name, want := range map[string]bool{"shell": true, "claude": false, "codex": false} {
		if got := profs[name].DrivesShell(); got != want {
			t.Errorf("%s.DrivesShell() = %v", name, got)
		}
	}
}
