package auth

// Workspace policy (`serve --policy FILE`): per workspace, the directories it may spawn
// in, the profiles and launchers it may run, and a trigger rate limit. The file:
//
//	{"workspaces": {
//	  "mobile_core": {"dirs": ["/src/mobile"], "profiles": ["codex"], "rate": "60/min"},
//	  "*":           {"profiles": ["codex", "claude"]}
//	}}
//
// "*" applies to workspaces not listed. Every dir must lie under a --root (checked at
// start, symlinks resolved). Empty fields mean no restriction beyond the global ones
// (--root, the profile's allowed_launchers, the per-thread --rate-limit).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

type policyFile struct {
	Workspaces map[string]workspacePolicy `json:"workspaces"`
}

type workspacePolicy struct {
	Dirs      []string `json:"dirs"`      // spawn directories (and below); empty: the --root list
	Profiles  []string `json:"profiles"`  // agent profiles it may run; empty: all
	Launchers []string `json:"launchers"` // argv[0] basenames an explicit argv may use; empty: the profile's
	Rate      string   `json:"rate"`      // triggers per workspace, e.g. "60/min"; "": unlimited
	// AutoAnswer: dialogs the daemon answers by itself (off when empty).
	AutoAnswer []autoAnswer `json:"auto_answer"`
}

// autoAnswer is one rule of a workspace's auto_answer list: a dialog whose command (the
// CLI's own structured field, nudge.Dialog.Command; never the agent's description or
// reason, the question or the labels) Match (a Go regexp) matches whole, shown by an
// agent of one of Agents (empty: any), is answered with Choice (approve, deny, or an
// option's key), audited with Reason. A command that chains or substitutes (";", "&",
// "|", "$(", "`", "<(", ">(", a newline) matches only a rule with Chains set.
type autoAnswer struct {
	Match  string   `json:"match"`
	Agents []string `json:"agents"`
	Choice string   `json:"choice"`
	Reason string   `json:"reason"`
	Chains bool     `json:"chains,omitempty"`
	re     *regexp.Regexp
}

// chaining holds what makes one command line run more than one command: a rule that
// names one command does not answer for the rest.
var chaining = []string{";", "&", "|", "$(", "`", "<(", ">(", "\n", "\r"}

// Policy is the loaded policy file; a nil *Policy allows everything (beyond the caller's
// own verbs and workspaces, which every Check method checks first).
type Policy struct {
	rules map[string]*wsRule
	now   func() time.Time
}

type wsRule struct {
	dirs, profiles, launchers []string
	limit                     *rateBucket
	auto                      []autoAnswer
}

// LoadPolicy reads and checks a policy file against the global roots; path "" is no
// policy (nil). now clocks the rate limits (nil: time.Now).
func LoadPolicy(path string, roots []string, now func() time.Time) (*Policy, error) {
	if path == "" {
		return nil, nil
	}
	if now == nil {
		now = time.Now
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	var pf policyFile
	if err := DecodeJSON(f, &pf); err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	var realRoots []string
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			realRoots = append(realRoots, rr)
		}
	}
	p := &Policy{rules: map[string]*wsRule{}, now: now}
	for ws, wp := range pf.Workspaces {
		rule, err := newRule(ws, wp, realRoots)
		if err != nil {
			return nil, fmt.Errorf("policy %s: workspace %q: %w", path, ws, err)
		}
		p.rules[ws] = rule
	}
	return p, nil
}

// ParseRate parses a rate: "10/min", "5/30s", "100/h".
func ParseRate(s string) (n int, per time.Duration, err error) {
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, errors.New("want N/UNIT, e.g. 10/min")
	}
	n, err = strconv.Atoi(num)
	if err != nil || n <= 0 {
		return 0, 0, errors.New("want a positive count, e.g. 10/min")
	}
	per, ok = map[string]time.Duration{"s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour, "hour": time.Hour}[unit]
	if !ok {
		if per, err = time.ParseDuration(unit); err != nil || per <= 0 {
			return 0, 0, errors.New("unit must be s, min, h or a Go duration")
		}
	}
	return n, per, nil
}

func newRule(ws string, wp workspacePolicy, roots []string) (*wsRule, error) {
	if ws != "*" {
		if err := panes.ValidWorkspace(ws); err != nil {
			return nil, err
		}
	}
	rule := &wsRule{profiles: wp.Profiles, launchers: wp.Launchers}
	for _, d := range wp.Dirs {
		real, err := checkDir(d)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return within(r, real) }) {
			return nil, fmt.Errorf("dir %s is not under any --root", d)
		}
		rule.dirs = append(rule.dirs, real)
	}
	for i, a := range wp.AutoAnswer {
		var err error
		if a.re, err = regexp.Compile(`^(?:` + a.Match + `)$`); err != nil || a.Match == "" {
			return nil, fmt.Errorf("auto_answer[%d].match %q: want a regexp (%v)", i, a.Match, err)
		}
		if a.Choice == "" || strings.TrimSpace(a.Reason) == "" {
			return nil, fmt.Errorf("auto_answer[%d]: choice (approve, deny or an option key) and reason are required", i)
		}
		rule.auto = append(rule.auto, a)
	}
	if wp.Rate != "" {
		n, per, err := ParseRate(wp.Rate)
		if err != nil {
			return nil, fmt.Errorf("rate %q: %w", wp.Rate, err)
		}
		rule.limit = &rateBucket{n: n, per: per}
	}
	return rule, nil
}

func badRequest(format string, args ...any) error {
	return nudge.NewError(nudge.BadRequest, fmt.Sprintf(format, args...))
}

func forbidden(format string, args ...any) error {
	return nudge.NewError(nudge.Forbidden, fmt.Sprintf(format, args...))
}

// checkDir requires an absolute path without "..", and resolves its symlinks.
func checkDir(d string) (string, error) {
	if !filepath.IsAbs(d) || slices.Contains(strings.Split(d, string(filepath.Separator)), "..") {
		return "", badRequest("directory %q must be absolute and hold no '..'", d)
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", badRequest("directory %q: %v", d, err)
	}
	return real, nil
}

// within reports whether path is root or below it (both cleaned and resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (p *Policy) rule(ws string) *wsRule {
	if p == nil {
		return nil
	}
	if r, ok := p.rules[ws]; ok {
		return r
	}
	return p.rules["*"]
}

// AutoAnswer is the workspace's automatic answer to dialog d of an agent of profile
// agent: the first auto_answer rule whose match matches the dialog's command whole (a
// chained command only a rule that allows chains). ok is false when none does, the
// dialog shows no command nudge can read, or there is no policy.
func (p *Policy) AutoAnswer(ws, agent string, d nudge.Dialog) (choice, reason string, ok bool) {
	r := p.rule(ws)
	if r == nil || d.Command == "" {
		return "", "", false
	}
	chained := slices.ContainsFunc(chaining, func(c string) bool { return strings.Contains(d.Command, c) })
	for _, a := range r.auto {
		if (len(a.Agents) == 0 || slices.Contains(a.Agents, agent)) && (a.Chains || !chained) && a.re.MatchString(d.Command) {
			return a.Choice, a.Reason, true
		}
	}
	return "", "", false
}

// Spawn is a spawn request as the policy checks it.
type Spawn struct {
	Workspace, Agent string
	Dir              string   // resolved by CheckSpawn to the directory that was checked
	Argv             []string // an explicit program, or none
	Host             string   // where the workspace's tmux runs ("" this machine)
	PromptFile       string   // a first prompt read from a file, or ""; resolved by CheckSpawn
}

// CheckSpawn authorizes a spawn for c: the verb and workspace, then the policy. It
// resolves s.Dir so the registry spawns in the directory that was checked.
func (p *Policy) CheckSpawn(c Caller, s *Spawn) error {
	if err := c.Allow(VerbSpawn, s.Workspace); err != nil {
		return err
	}
	rule := p.rule(s.Workspace)
	if rule == nil {
		return nil
	}
	if err := rule.checkProfile(s.Workspace, s.Agent); err != nil {
		return err
	}
	if err := rule.checkDir(s); err != nil {
		return err
	}
	if err := rule.checkPromptFile(s); err != nil {
		return err
	}
	if len(s.Argv) > 0 && len(rule.launchers) > 0 && s.Host != "" && !slices.Contains(rule.launchers, s.Argv[0]) {
		// On another host the program cannot be resolved from here: it must be one of the
		// policy's launchers exactly as written (found on that host's PATH).
		return forbidden("workspace %s may not launch %q on host %s (policy launchers: %s; add it to the workspace's \"launchers\" in the policy file)",
			s.Workspace, s.Argv[0], s.Host, strings.Join(rule.launchers, ", "))
	}
	if len(s.Argv) > 0 && len(rule.launchers) > 0 && s.Host == "" {
		lr := panes.LauncherRule{Allowed: rule.launchers, Named: rule.launchers, Dirs: append([]string{s.Dir}, rule.dirs...), Cwd: s.Dir}
		if _, err := panes.ResolveLauncher(s.Argv[0], lr); err != nil {
			return forbidden("workspace %s may not launch %q: %v (policy launchers: %s; add it to the workspace's \"launchers\" in the policy file)",
				s.Workspace, s.Argv[0], err, strings.Join(rule.launchers, ", "))
		}
	}
	return nil
}

// checkDir pins s.Dir to the workspace's allowed dirs (the first one if none is given).
func (rule *wsRule) checkDir(s *Spawn) error {
	if len(rule.dirs) == 0 {
		return nil
	}
	if s.Dir == "" {
		s.Dir = rule.dirs[0]
		return nil
	}
	real, err := rule.inDirs("directory", s.Dir, s.Workspace, `add it to the workspace's "dirs" in the policy file (serve --policy)`)
	if err == nil {
		s.Dir = real
	}
	return err
}

// checkPromptFile pins a first prompt's file to the workspace's allowed dirs: the daemon
// reads it with its own rights, and a caller held to the workspace's dirs may not have it
// read a file of another workspace (then see it typed, in the agent's screen and record).
func (rule *wsRule) checkPromptFile(s *Spawn) error {
	if len(rule.dirs) == 0 || s.PromptFile == "" {
		return nil
	}
	real, err := rule.inDirs("prompt file", s.PromptFile, s.Workspace, "put it in one of them, or pass the prompt itself")
	if err == nil {
		s.PromptFile = real
	}
	return err
}

// inDirs resolves path (what it is, for the message) and checks that it lies in one of
// the workspace's allowed dirs; fix says how to allow it.
func (rule *wsRule) inDirs(what, path, ws, fix string) (string, error) {
	real, err := checkDir(path)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(rule.dirs, func(r string) bool { return within(r, real) }) {
		return "", forbidden("%s %s (resolved %s) is outside workspace %s's allowed dirs (%s): %s",
			what, path, real, ws, strings.Join(rule.dirs, ", "), fix)
	}
	return real, nil
}

// LaunchPolicy is panes.Config.LaunchPolicy: the workspace's policy launchers and dirs.
func (p *Policy) LaunchPolicy(ws string) (launchers, dirs []string) {
	if r := p.rule(ws); r != nil {
		return r.launchers, r.dirs
	}
	return nil, nil
}

func (r *wsRule) checkProfile(ws, agent string) error {
	if agent == "" {
		agent = "codex"
	}
	if len(r.profiles) > 0 && !slices.Contains(r.profiles, agent) {
		return forbidden("workspace %s may not run profile %q (policy profiles: %s; add it to the workspace's \"profiles\" in the policy file)", ws, agent, strings.Join(r.profiles, ", "))
	}
	return nil
}

// CheckRegister authorizes adopting a pane for c: the verb and workspace, and the profile.
func (p *Policy) CheckRegister(c Caller, workspace, agent string) error {
	if err := c.Allow(VerbSpawn, workspace); err != nil {
		return err
	}
	if rule := p.rule(workspace); rule != nil {
		return rule.checkProfile(workspace, agent)
	}
	return nil
}

// CheckTrigger authorizes a trigger for c: the verb and workspace, the names, then the
// workspace's rate limit (a repeated trigger_id counts too: the limit is on requests).
func (p *Policy) CheckTrigger(c Caller, workspace, agent string) error {
	if err := c.Allow(VerbTrigger, workspace); err != nil {
		return err
	}
	if workspace != "" && agent != "" { // missing ones are the pipeline's BAD_REQUEST
		if err := panes.ValidWorkspace(workspace); err != nil {
			return err
		}
		if err := panes.ValidRole(agent); err != nil {
			return badRequest("invalid agent %q: want 1-64 of [A-Za-z0-9_.-]", agent)
		}
	}
	if rule := p.rule(workspace); rule != nil && rule.limit != nil && !rule.limit.take(workspace, p.now()) {
		return nudge.NewError(nudge.TriggerRateLimited, fmt.Sprintf("workspace %s is over its policy rate of %d per %s", workspace, rule.limit.n, rule.limit.per))
	}
	return nil
}

// rateBucket is a token bucket per workspace: n requests, refilled evenly over per.
type rateBucket struct {
	n   int
	per time.Duration

	mu sync.Mutex
	by map[string]*bucketState
}

type bucketState struct {
	tokens float64
	at     time.Time
}

func (b *rateBucket) take(ws string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]*bucketState{}
	}
	s, ok := b.by[ws]
	if !ok {
		s = &bucketState{tokens: float64(b.n), at: now}
		b.by[ws] = s
	}
	if el := now.Sub(s.at); el > 0 {
		s.tokens = min(float64(b.n), s.tokens+float64(b.n)*float64(el)/float64(b.per))
		s.at = now
	}
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}
