package panes

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nudgehq/nudge/ack/record"
	"github.com/nudgehq/nudge/controlmode"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

//go:embed profiles/*.json
var defaultProfiles embed.FS

// Profile describes how nudge drives one agent CLI. Profiles are data: the defaults are
// embedded from profiles/*.json and a file of the same name in the user's profile
// directory replaces a default wholesale. A Profile is a value; its compiled patterns are
// shared read-only.
type Profile struct {
	// Name is the profile's name (the file name without .json).
	Name string
	// Launch is the default argv that starts the agent (never a shell string).
	Launch []string
	// AllowedLaunchers are the argv[0] basenames an explicit `-- ARGV` may use with this
	// profile. "*" allows any.
	AllowedLaunchers []string
	// PromptArg says how the CLI takes a first prompt at launch: "" = not supported,
	// "append" = as the last argv element, "-x"/"--flag" = that flag then the prompt.
	// nudge never puts a prompt on a command line (every local uid reads argv): a spawn's
	// first prompt is typed into the agent once it is ready; "" still refuses one.
	PromptArg string
	// Resume is the resume argv template with {session_id} and {prompt} placeholders;
	// empty = the agent cannot resume. The fallback chain resumes with ResumeLiveArgv
	// (no prompt on it) and types the prompt.
	Resume []string
	// SessionIDPattern finds the agent's session id in pane output (first submatch);
	// "" = the agent does not print it.
	SessionIDPattern string
	// SessionIDValid is what a session id must match before it goes into an argv.
	SessionIDValid string
	// Pack names the detector readiness pack (the profile name by default).
	Pack string
	// SubmitSettle is the wait after the text's echo before Enter is sent as its own key.
	SubmitSettle time.Duration
	// QueuesInput reports whether the agent accepts typed input while busy.
	QueuesInput bool
	// AckSignals lists the ack signals the agent can give: marker, api, heartbeat, cursor.
	AckSignals []string
	// SubmittedIsAck makes "submitted" count as the ack (for agents that cannot ack).
	SubmittedIsAck bool
	// SendsHeartbeats says the agent sends heartbeats by itself, so the stale-heartbeat
	// alert watches it from its start; otherwise only once it has sent one.
	SendsHeartbeats bool
	// ReadyQuiet is the quiet window before a readiness capture.
	ReadyQuiet time.Duration
	// IntakeTimeout bounds the agent's intake of a prompt nudge submitted: the time it may
	// take, after the prompt left its composer, before it shows that it took it (draws
	// anything: its busy sign, the prompt in its transcript, an answer; or acks). Until then
	// its pane does not count as READY for the next trigger. Gemini CLI reads a large paste
	// for seconds (tens of seconds on a loaded machine) before it draws anything. 0 =
	// DefaultIntakeTimeout.
	IntakeTimeout time.Duration
	// Env holds extra KEY=VALUE pairs for the agent's pane, sorted by key.
	Env []string
	// UnsetEnv names variables removed from the agent's environment at launch (whatever
	// the tmux server or session holds), sorted: Gemini CLI turns non-interactive, never
	// opening its TUI, when CI or GITHUB_ACTIONS is "true", as it is where nudge itself
	// runs inside a CI job.
	UnsetEnv []string
	// ResumeInteractive is the argv template (with {session_id}) that reopens the agent's
	// session interactively in its pane; a crashed runtime whose session id is known is
	// restarted with it (seed 003), else with its own argv. Empty = always fresh.
	ResumeInteractive []string
	// DoneMarker is a line the program prints when its task is complete (seed 003's
	// __TASK_DONE__): seen on a line of its own, the program's end counts as a clean exit
	// whatever its status. "" = none.
	DoneMarker string
	// RestartOnExit restarts the program after a clean exit too (a service that must keep
	// running); by default a clean exit leaves the runtime exited.
	RestartOnExit bool
	// ReadyOn says when a starting runtime becomes ready: "readiness" = once the detector
	// reads READY on its screen (the agent's composer is up); "alive" (or "") = as soon as
	// its pane is alive (plain shells and programs with no readiness cues).
	ReadyOn string
	// StartTimeout bounds starting → ready; past it the runtime is failed with its screen as
	// evidence. 0 = the registry's default (Config.StartTimeout).
	StartTimeout time.Duration
	// SessionIDFlag is the flag that names a new session at launch (Claude Code's and
	// Gemini CLI's "--session-id"): a spawn gives the agent a fresh UUID with it, so that
	// its session id, and the file of its record, are known from the start. "" = none.
	SessionIDFlag string
	// Record names the reader of the agent's own session record (ack/record: "claude",
	// "codex", ...): its prompts and turns are read there, acks and replies come from it
	// ("record" joins AckSignals). "" = none: acks rest on the screen and the marker.
	Record string
	// AckHint makes the envelope ask the agent to print the ack marker. It defaults to
	// true without a Record and false with one (the record shows the turn).
	AckHint bool
	// Channel names the agent's own channel a prompt is handed over by instead of typed
	// ("codex": Codex's app-server control socket; "claude": Claude Code's messaging
	// socket), when it is there; "" = typed always.
	Channel string
	// ChannelFlag is the flag that opens the agent's channel at a path nudge chooses
	// (Claude Code's "--messaging-socket-path"), given at a spawn when the agent's program
	// reports ChannelSince or newer (`PROGRAM --version`); "" = none.
	ChannelFlag string
	// ChannelSince is the lowest version of the agent's program with ChannelFlag.
	ChannelSince string
	// PermissionHookFlag is the flag that loads a settings file (Claude Code's
	// "--settings") in which nudge puts a PermissionRequest hook running `nudge hook
	// claude-permission` (Config.Self): the agent hands each permission it asks of its
	// operator to nudge too, and takes the answer nudge gives. Given with ChannelFlag (the
	// same version check); "" = none.
	PermissionHookFlag string
	// Source is the file the profile was read from; "" = the embedded default.
	Source string

	sessionRE *regexp.Regexp
	validRE   *regexp.Regexp
}

// profileFile is the JSON shape of a profile file.
type profileFile struct {
	Name             string            `json:"name"`
	Launch           []string          `json:"launch"`
	AllowedLaunchers []string          `json:"allowed_launchers"`
	PromptArg        string            `json:"prompt_arg"`
	Resume           []string          `json:"resume"`
	SessionIDPattern string            `json:"session_id_pattern"`
	SessionIDValid   string            `json:"session_id_valid"`
	Pack             string            `json:"pack"`
	SubmitSettle     string            `json:"submit_settle"`
	QueuesInput      bool              `json:"queues_input"`
	AckSignals       []string          `json:"ack_signals"`
	SubmittedIsAck   bool              `json:"submitted_is_ack"`
	SendsHeartbeats  bool              `json:"sends_heartbeats,omitempty"`
	ReadyQuiet       string            `json:"ready_quiet"`
	IntakeTimeout    string            `json:"intake_timeout"`
	Env              map[string]string `json:"env"`
	UnsetEnv         []string          `json:"unset_env"`
	ResumeInteract   []string          `json:"resume_interactive"`
	DoneMarker       string            `json:"done_marker"`
	RestartOnExit    bool              `json:"restart_on_exit"`
	ReadyOn          string            `json:"ready_on"`
	StartTimeout     string            `json:"start_timeout"`
	Record           string            `json:"record"`
	SessionIDFlag    string            `json:"session_id_flag"`
	AckHint          *bool             `json:"ack_hint"`
	Channel          string            `json:"channel"`
	ChannelFlag      string            `json:"channel_flag"`
	ChannelSince     string            `json:"channel_since"`
	PermissionHook   string            `json:"permission_hook_flag"`
}

// Values of Profile.Channel: Codex's app-server control socket, Claude Code's messaging
// socket, OpenCode's own HTTP server (on a loopback port nudge chooses, with a password
// of its own: OpenCodeChannel).
const (
	ChannelCodex    = "codex"
	ChannelClaude   = "claude"
	ChannelOpenCode = "opencode"
)

// Values of Profile.ReadyOn.
const (
	ReadyOnAlive     = "alive"
	ReadyOnReadiness = "readiness"
)

// Profile errors callers branch on.
var (
	// ErrNoResume: the profile has no resume command (pi, shell, ...).
	ErrNoResume = errors.New("profile has no resume command")
	// ErrBadSessionID: a session id is empty or does not match SessionIDValid.
	ErrBadSessionID = errors.New("invalid session id")
	// ErrLauncherNotAllowed: an explicit argv's program is not allowed for the profile.
	ErrLauncherNotAllowed = errors.New("launcher not allowed for profile")
	// ErrNoPromptArg: a first prompt was given but the profile cannot take one at launch.
	ErrNoPromptArg = errors.New("profile cannot take a prompt at launch")
)

// DefaultIntakeTimeout is a profile's IntakeTimeout when it sets none.
const DefaultIntakeTimeout = 15 * time.Second

// Intake returns the profile's IntakeTimeout, or DefaultIntakeTimeout.
func (p Profile) Intake() time.Duration {
	if p.IntakeTimeout > 0 {
		return p.IntakeTimeout
	}
	return DefaultIntakeTimeout
}

const defaultSessionIDValid = `^[A-Za-z0-9_-]+$`

var ackSignalNames = []string{"marker", "api", "heartbeat", "cursor", "record"}

// LoadProfiles returns the embedded default profiles, each replaced by a file of the same
// name in userDir if there is one; userDir may add new profiles. userDir "" or missing means
// defaults only. A userDir that is not a readable directory, or a file in it that is not a
// valid profile, is an error that names the path.
func LoadProfiles(userDir string) (map[string]Profile, error) {
	out := make(map[string]Profile)
	if err := loadProfileDir(defaultProfiles, "profiles", "", out); err != nil {
		return nil, fmt.Errorf("load default profiles: %w", err)
	}
	if userDir == "" {
		return out, nil
	}
	fi, err := os.Stat(userDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("load profiles: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("load profiles: %s is not a directory", userDir)
	}
	if err := loadProfileDir(os.DirFS(userDir), ".", userDir, out); err != nil {
		return nil, err
	}
	return out, nil
}

// loadProfileDir reads dir/*.json of fsys into out. src is the directory's path on disk
// ("" for the embedded defaults): it goes into errors and Profile.Source.
func loadProfileDir(fsys fs.FS, dir, src string, out map[string]Profile) error {
	entries, err := fs.ReadDir(fsys, dir) // unlike fs.Glob, reports an unreadable directory
	if err != nil {
		return fmt.Errorf("load profiles: %w", pathErr(err, src))
	}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".json" {
			continue
		}
		file := path.Join(dir, e.Name())
		where := file
		if src != "" {
			where = filepath.Join(src, e.Name())
		}
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return fmt.Errorf("load profile %s: %w", where, pathErr(err, src))
		}
		p, err := ParseProfile(strings.TrimSuffix(e.Name(), ".json"), b)
		if err != nil {
			return fmt.Errorf("load profile %s: %w", where, err)
		}
		if src != "" {
			p.Source = where
		}
		out[p.Name] = p
	}
	return nil
}

// pathErr puts the directory's real path into an os.DirFS error (which holds the path
// relative to the directory).
func pathErr(err error, dir string) error {
	var pe *fs.PathError
	if dir != "" && errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: filepath.Join(dir, pe.Path), Err: pe.Err}
	}
	return err
}

// ParseProfile decodes and validates one profile file. name is the file's name without
// .json; the file's "name" field, if set, must agree.
func ParseProfile(name string, data []byte) (Profile, error) {
	var f profileFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Profile{}, fmt.Errorf("profile %q: %w", name, err)
	}
	if f.Name != "" && f.Name != name {
		return Profile{}, fmt.Errorf("profile %q: name field %q differs from file name", name, f.Name)
	}
	f.Name = name
	p, err := f.profile()
	if err != nil {
		return Profile{}, fmt.Errorf("profile %q: %w", name, err)
	}
	return p, nil
}

func (f profileFile) profile() (Profile, error) {
	p := Profile{
		Name: f.Name, Launch: f.Launch, AllowedLaunchers: f.AllowedLaunchers,
		PromptArg: f.PromptArg, Resume: f.Resume, SessionIDPattern: f.SessionIDPattern,
		SessionIDValid: f.SessionIDValid, Pack: f.Pack, QueuesInput: f.QueuesInput,
		AckSignals: f.AckSignals, SubmittedIsAck: f.SubmittedIsAck, SendsHeartbeats: f.SendsHeartbeats,
		ResumeInteractive: f.ResumeInteract, DoneMarker: strings.TrimSpace(f.DoneMarker),
		RestartOnExit: f.RestartOnExit, ReadyOn: f.ReadyOn, Record: f.Record, SessionIDFlag: f.SessionIDFlag,
		AckHint: f.Record == "", Channel: f.Channel, ChannelFlag: f.ChannelFlag, ChannelSince: f.ChannelSince,
		PermissionHookFlag: f.PermissionHook,
	}
	if f.AckHint != nil {
		p.AckHint = *f.AckHint
	}
	if err := validName(f.Name); err != nil {
		return Profile{}, err
	}
	var err error
	if p.SubmitSettle, err = parseDuration(f.SubmitSettle); err != nil {
		return Profile{}, fmt.Errorf("submit_settle: %w", err)
	}
	if p.ReadyQuiet, err = parseDuration(f.ReadyQuiet); err != nil {
		return Profile{}, fmt.Errorf("ready_quiet: %w", err)
	}
	if p.IntakeTimeout, err = parseDuration(f.IntakeTimeout); err != nil {
		return Profile{}, fmt.Errorf("intake_timeout: %w", err)
	}
	if p.StartTimeout, err = parseDuration(f.StartTimeout); err != nil {
		return Profile{}, fmt.Errorf("start_timeout: %w", err)
	}
	p.Env, err = envList(f.Env)
	if err != nil {
		return Profile{}, err
	}
	for _, k := range f.UnsetEnv {
		if !envKeyRE.MatchString(k) {
			return Profile{}, fmt.Errorf("unset_env: bad variable %q", k)
		}
		if _, set := f.Env[k]; set {
			return Profile{}, fmt.Errorf("unset_env: %q is also in env", k)
		}
	}
	p.UnsetEnv = slices.Sorted(slices.Values(f.UnsetEnv))
	return p, p.finish()
}

// finish fills defaults, compiles the patterns and checks the rest.
func (p *Profile) finish() error {
	if p.Pack == "" {
		p.Pack = p.Name
	}
	if p.SessionIDValid == "" {
		p.SessionIDValid = defaultSessionIDValid
	}
	if len(p.Launch) == 0 || p.Launch[0] == "" {
		return errors.New("launch: empty argv")
	}
	if len(p.AllowedLaunchers) == 0 {
		p.AllowedLaunchers = []string{filepath.Base(p.Launch[0])}
	}
	if p.PromptArg != "" && p.PromptArg != "append" && !strings.HasPrefix(p.PromptArg, "-") {
		return fmt.Errorf("prompt_arg %q: want \"\", \"append\" or a flag", p.PromptArg)
	}
	if p.ReadyOn == "" {
		p.ReadyOn = ReadyOnAlive
	}
	if p.ReadyOn != ReadyOnAlive && p.ReadyOn != ReadyOnReadiness {
		return fmt.Errorf("ready_on %q: want %q or %q", p.ReadyOn, ReadyOnAlive, ReadyOnReadiness)
	}
	if len(p.ResumeInteractive) > 0 && !slices.ContainsFunc(p.ResumeInteractive, func(s string) bool { return strings.Contains(s, "{session_id}") }) {
		return errors.New("resume_interactive: needs a {session_id} placeholder")
	}
	for _, s := range p.AckSignals {
		if !slices.Contains(ackSignalNames, s) {
			return fmt.Errorf("ack_signals: unknown signal %q", s)
		}
	}
	if p.SessionIDFlag != "" && !strings.HasPrefix(p.SessionIDFlag, "-") {
		return fmt.Errorf("session_id_flag %q: want a flag such as --session-id", p.SessionIDFlag)
	}
	if p.Channel != "" && p.Channel != ChannelCodex && p.Channel != ChannelClaude && p.Channel != ChannelOpenCode {
		return fmt.Errorf("channel %q: want %q, %q, %q or none", p.Channel, ChannelCodex, ChannelClaude, ChannelOpenCode)
	}
	if p.ChannelFlag != "" && (!strings.HasPrefix(p.ChannelFlag, "-") || p.Channel == "") {
		return fmt.Errorf("channel_flag %q: want a flag such as --messaging-socket-path, with a channel", p.ChannelFlag)
	}
	if p.PermissionHookFlag != "" && (!strings.HasPrefix(p.PermissionHookFlag, "-") || p.ChannelFlag == "" || p.Channel != ChannelClaude) {
		return fmt.Errorf("permission_hook_flag %q: want a flag such as --settings, with channel %q and a channel_flag", p.PermissionHookFlag, ChannelClaude)
	}
	if p.ChannelSince != "" {
		if _, ok := parseVersion(p.ChannelSince); !ok {
			return fmt.Errorf("channel_since %q: want a version such as 2.1.224", p.ChannelSince)
		}
	}
	if p.Record != "" {
		if _, err := record.Lookup(p.Record); err != nil {
			return fmt.Errorf("record %q: no such reader (known: %s)", p.Record, strings.Join(record.Names(), ", "))
		}
		if len(p.AckSignals) > 0 && !slices.Contains(p.AckSignals, "record") {
			p.AckSignals = append(slices.Clone(p.AckSignals), "record")
		}
	}
	return p.compile()
}

func (p *Profile) compile() error {
	var err error
	if p.validRE, err = regexp.Compile(p.SessionIDValid); err != nil {
		return fmt.Errorf("session_id_valid: %w", err)
	}
	if p.SessionIDPattern != "" {
		if p.sessionRE, err = regexp.Compile(p.SessionIDPattern); err != nil {
			return fmt.Errorf("session_id_pattern: %w", err)
		}
		if p.sessionRE.NumSubexp() < 1 {
			return errors.New("session_id_pattern: needs a capture group")
		}
	}
	if len(p.Resume) > 0 && filepath.Base(p.Resume[0]) != p.Resume[0] && !filepath.IsAbs(p.Resume[0]) {
		return fmt.Errorf("resume: bad program %q", p.Resume[0])
	}
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative duration %q", s)
	}
	return d, err
}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func envList(m map[string]string) ([]string, error) {
	var out []string
	for k, v := range m {
		if !envKeyRE.MatchString(k) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env: bad variable %q", k)
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// FindSessionID returns the agent's session id from pane output, or "" if the profile
// has no pattern or the output holds no valid id.
func (p Profile) FindSessionID(output []byte) string {
	if p.sessionRE == nil {
		return ""
	}
	m := p.sessionRE.FindSubmatch(output)
	if m == nil || !p.ValidSessionID(string(m[1])) {
		return ""
	}
	return string(m[1])
}

// ValidSessionID reports whether id may be put into a resume argv. Whatever the
// profile's pattern says, an id may not start with '-': the CLI would read it as a flag
// (`--last` would resume some other session).
func (p Profile) ValidSessionID(id string) bool {
	re := p.validRE
	if re == nil {
		re = regexp.MustCompile(defaultSessionIDValid)
	}
	return id != "" && id[0] != '-' && len(id) <= 256 && re.MatchString(id)
}

// DrivesShell reports whether the profile's program is a shell (the shell pack, or a
// launch program that is a shell, as controlmode.IsShell names them): only such a
// runtime's pane is typed into while a shell holds its foreground. Any other profile's
// triggers are typed with controlmode.IfAgent, which refuses a pane whose agent has
// exited (or been suspended) back to the shell it was started from.
func (p Profile) DrivesShell() bool {
	return p.Pack == "shell" || len(p.Launch) > 0 && controlmode.IsShell(filepath.Base(p.Launch[0]))
}

// CanResume reports whether the profile has a resume command.
func (p Profile) CanResume() bool { return len(p.Resume) > 0 }

// ResumeArgv fills the resume template. The session id is validated first; the prompt is
// one argv element whatever it holds (no shell ever sees it). Placeholders are replaced in
// one pass, so a prompt containing "{session_id}" stays literal.
func (p Profile) ResumeArgv(sessionID, prompt string) ([]string, error) {
	if !p.CanResume() {
		return nil, fmt.Errorf("resume %s: %w", p.Name, ErrNoResume)
	}
	needsID := slices.ContainsFunc(p.Resume, func(s string) bool { return strings.Contains(s, "{session_id}") })
	if needsID && !p.ValidSessionID(sessionID) {
		return nil, fmt.Errorf("resume %s: %w: %q", p.Name, ErrBadSessionID, sessionID)
	}
	if strings.ContainsRune(prompt, 0) {
		return nil, fmt.Errorf("resume %s: prompt contains NUL", p.Name)
	}
	r := strings.NewReplacer("{session_id}", sessionID, "{prompt}", prompt)
	out := make([]string, len(p.Resume))
	for i, s := range p.Resume {
		out[i] = r.Replace(s)
	}
	return out, nil
}

// ResumeInteractiveArgv fills the ResumeInteractive template with a validated session id,
// or returns nil when the profile has none or the id is not valid.
func (p Profile) ResumeInteractiveArgv(sessionID string) []string {
	if len(p.ResumeInteractive) == 0 || !p.ValidSessionID(sessionID) {
		return nil
	}
	out := make([]string, len(p.ResumeInteractive))
	for i, s := range p.ResumeInteractive {
		out[i] = strings.ReplaceAll(s, "{session_id}", sessionID)
	}
	return out
}

// ResumeLiveArgv is the argv that reopens sessionID with no prompt on its command line
// (where every local uid could read it): the ResumeInteractive template, else the Resume
// template without its {prompt} elements. The fallback chain launches it, then types the
// prompt into the resumed agent once it is ready. nil when the profile has neither, or
// the id is not valid.
func (p Profile) ResumeLiveArgv(sessionID string) []string {
	if argv := p.ResumeInteractiveArgv(sessionID); argv != nil {
		return argv
	}
	if !p.CanResume() || !p.ValidSessionID(sessionID) {
		return nil
	}
	var out []string
	for _, s := range p.Resume {
		if !strings.Contains(s, "{prompt}") {
			out = append(out, strings.ReplaceAll(s, "{session_id}", sessionID))
		}
	}
	return out
}

// IsResume reports whether argv is this profile's resume command (the Resume template with
// any session id and prompt): a one-shot run, not the runtime's own program.
func (p Profile) IsResume(argv []string) bool {
	if len(p.Resume) == 0 || len(argv) != len(p.Resume) {
		return false
	}
	for i, s := range p.Resume {
		if !strings.Contains(s, "{") && argv[i] != s {
			return false
		}
	}
	return true
}

// LaunchArgv returns the argv that starts the agent: override if given (its program's
// basename must be in AllowedLaunchers), else Launch; a non-empty prompt is added the way
// PromptArg says.
func (p Profile) LaunchArgv(override []string, prompt string) ([]string, error) {
	argv := slices.Clone(p.Launch)
	if len(override) > 0 {
		if err := p.checkLauncher(override[0]); err != nil {
			return nil, err
		}
		argv = slices.Clone(override)
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("launch %s: argument contains NUL", p.Name)
		}
	}
	if prompt == "" {
		return argv, nil
	}
	switch {
	case p.PromptArg == "":
		return nil, fmt.Errorf("launch %s: %w", p.Name, ErrNoPromptArg)
	case strings.ContainsRune(prompt, 0):
		return nil, fmt.Errorf("launch %s: prompt contains NUL", p.Name)
	case p.PromptArg == "append":
		return append(argv, prompt), nil
	default:
		return append(argv, p.PromptArg, prompt), nil
	}
}

func (p Profile) checkLauncher(prog string) error {
	base := filepath.Base(prog)
	if prog == "" || strings.Contains(prog, "=") {
		return fmt.Errorf("launch %s: %w: %q", p.Name, ErrLauncherNotAllowed, prog)
	}
	if slices.Contains(p.AllowedLaunchers, "*") || slices.Contains(p.AllowedLaunchers, base) {
		return nil
	}
	return fmt.Errorf("launch %s: %w: %q (allowed: %s)", p.Name, ErrLauncherNotAllowed,
		base, strings.Join(p.AllowedLaunchers, ", "))
}
