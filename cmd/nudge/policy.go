package main

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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/inject"
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
}

// policy is the loaded file; a nil *policy allows everything.
type policy struct {
	rules map[string]*wsRule
}

type wsRule struct {
	dirs, profiles, launchers []string
	limit                     *rateBucket
}

// loadPolicy reads and checks a policy file against the global roots.
func loadPolicy(path string, roots []string) (*policy, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	var pf policyFile
	if err := auth.DecodeJSON(f, &pf); err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	var realRoots []string
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			realRoots = append(realRoots, rr)
		}
	}
	p := &policy{rules: map[string]*wsRule{}}
	for ws, wp := range pf.Workspaces {
		rule, err := newRule(ws, wp, realRoots)
		if err != nil {
			return nil, fmt.Errorf("policy %s: workspace %q: %w", path, ws, err)
		}
		p.rules[ws] = rule
	}
	return p, nil
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
	if wp.Rate != "" {
		var n int
		var per time.Duration
		if err := (rateFlag{&n, &per}).Set(wp.Rate); err != nil {
			return nil, fmt.Errorf("rate %q: %w", wp.Rate, err)
		}
		rule.limit = &rateBucket{n: n, per: per}
	}
	return rule, nil
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

func (p *policy) rule(ws string) *wsRule {
	if p == nil {
		return nil
	}
	if r, ok := p.rules[ws]; ok {
		return r
	}
	return p.rules["*"]
}

// checkSpawn authorizes a spawn: the verb and workspace, then the policy. It resolves
// b.Dir so the registry spawns in the directory that was checked.
func (d *daemon) checkSpawn(c caller, b *spawnBody) error {
	if err := c.allow(verbSpawn, b.Workspace); err != nil {
		return err
	}
	rule := d.auth.policy.rule(b.Workspace)
	if rule == nil {
		return nil
	}
	if err := rule.checkProfile(b.Workspace, b.Agent); err != nil {
		return err
	}
	if err := rule.checkDir(b); err != nil {
		return err
	}
	host := b.Host
	if host == "" {
		host = d.reg.HostOf(b.Workspace)
	}
	if len(b.Argv) > 0 && len(rule.launchers) > 0 && host != "" && !slices.Contains(rule.launchers, b.Argv[0]) {
		// On another host the program cannot be resolved from here: it must be one of the
		// policy's launchers exactly as written (found on that host's PATH).
		return &apiError{nudge.Forbidden, fmt.Sprintf("workspace %s may not launch %q on host %s (policy launchers: %s)",
			b.Workspace, b.Argv[0], host, strings.Join(rule.launchers, ", "))}
	}
	if len(b.Argv) > 0 && len(rule.launchers) > 0 && host == "" {
		lr := panes.LauncherRule{Allowed: rule.launchers, Named: rule.launchers, Dirs: append([]string{b.Dir}, rule.dirs...), Cwd: b.Dir}
		if _, err := panes.ResolveLauncher(b.Argv[0], lr); err != nil {
			return &apiError{nudge.Forbidden, fmt.Sprintf("workspace %s may not launch %q: %v (policy launchers: %s)",
				b.Workspace, b.Argv[0], err, strings.Join(rule.launchers, ", "))}
		}
	}
	return nil
}

// checkDir pins b.Dir to the workspace's allowed dirs (the first one if none is given).
func (rule *wsRule) checkDir(b *spawnBody) error {
	if len(rule.dirs) == 0 {
		return nil
	}
	if b.Dir == "" {
		b.Dir = rule.dirs[0]
		return nil
	}
	real, err := checkDir(b.Dir)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(rule.dirs, func(r string) bool { return within(r, real) }) {
		return &apiError{nudge.Forbidden, fmt.Sprintf("directory %s (resolved %s) is outside workspace %s's allowed dirs", b.Dir, real, b.Workspace)}
	}
	b.Dir = real
	return nil
}

// launchPolicy is panes.Config.LaunchPolicy: the workspace's policy launchers and dirs.
func (p *policy) launchPolicy(ws string) (launchers, dirs []string) {
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
		return &apiError{nudge.Forbidden, fmt.Sprintf("workspace %s may not run profile %q (policy profiles: %s)", ws, agent, strings.Join(r.profiles, ", "))}
	}
	return nil
}

// checkRegister authorizes adopting a pane: the verb and workspace, and the profile.
func (d *daemon) checkRegister(c caller, b *registerBody) error {
	if err := c.allow(verbSpawn, b.Workspace); err != nil {
		return err
	}
	if rule := d.auth.policy.rule(b.Workspace); rule != nil {
		return rule.checkProfile(b.Workspace, b.Agent)
	}
	return nil
}

// checkTrigger authorizes a trigger: the verb and workspace, then the workspace's rate
// limit (a repeated trigger_id counts too: the limit is on requests).
func (d *daemon) checkTrigger(c caller, req *inject.Request) error {
	if err := c.allow(verbTrigger, req.Workspace); err != nil {
		return err
	}
	if req.Workspace != "" && req.Agent != "" { // missing ones are the pipeline's BAD_REQUEST
		if err := panes.ValidWorkspace(req.Workspace); err != nil {
			return err
		}
		if err := panes.ValidRole(req.Agent); err != nil {
			return badRequest("invalid agent %q: want 1-64 of [A-Za-z0-9_.-]", req.Agent)
		}
	}
	if rule := d.auth.policy.rule(req.Workspace); rule != nil && rule.limit != nil && !rule.limit.take(req.Workspace, d.auth.now()) {
		return &apiError{nudge.TriggerRateLimited, fmt.Sprintf("workspace %s is over its policy rate of %d per %s", req.Workspace, rule.limit.n, rule.limit.per)}
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
