// Package doctor is `nudge doctor`: it checks what nudge needs (seed 001 §3) on every
// host in use (this machine, the hosts of the daemon's workspaces, and each --host): ssh
// reaches it, tmux there is new enough, the programs its runtimes launch are on its PATH;
// and on this machine the agent CLIs of the known profiles, the state and socket
// permissions, the store's size (against serve --store-warn-size, which the daemon says)
// and its file system's room, the profile and pack override directories, and whether the
// daemon answers. Each check prints one line, ok, warn or FAIL, with what to do.
//
// It also describes the override directories for serve's log (ProfileOverrides,
// PackOverrides, MissingPacks), so the daemon and doctor say the same.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge/controlmode"
)

// Config is what Check checks and where it writes.
type Config struct {
	SSH, SSHConfig      string // the ssh binary and config file (ssh -F; "" the user's own)
	Tmux                string // the tmux binary
	Out                 io.Writer
	StateDir            string // the daemon's state directory (its permissions are checked)
	ProfileDir, PackDir string // the override directories serve reads
	// Given says which of StateDir, ProfileDir and PackDir the user named: those are
	// checked as named. The others are defaults, and a daemon that answers with its own
	// paths (api.Health.Paths) has those checked instead.
	Given struct{ StateDir, ProfileDir, PackDir bool }
	Hosts []string
	// JSON prints one Report as JSON at the end instead of a line per check.
	JSON bool
}

// Report is doctor's answer as JSON (doctor -o json).
type Report struct {
	OK     bool          `json:"ok"` // no check failed
	Failed int           `json:"failed"`
	Warned int           `json:"warned"`
	Checks []CheckResult `json:"checks"`
}

// CheckResult is one check: its level (ok, warn, fail), the host ("" this machine) and
// what it found or what to do.
type CheckResult struct {
	Level   string `json:"level"`
	Host    string `json:"host,omitempty"`
	Message string `json:"message"`
}

// Check runs every check, printing one line per check to cfg.Out, and fails if one
// failed.
func Check(ctx context.Context, c *api.Client, cfg Config) error {
	d := &doctor{ssh: cfg.SSH, config: cfg.SSHConfig, tmux: cfg.Tmux, say: doctorLines{out: cfg.Out, json: cfg.JSON},
		stateDir: cfg.StateDir, profileDir: cfg.ProfileDir, packDir: cfg.PackDir, given: cfg.Given, hosts: cfg.Hosts}
	return d.check(ctx, c)
}

// doctor checks this machine (and the hosts of its workspaces) for what nudge needs.
type doctor struct {
	ssh, config, tmux   string
	say                 doctorLines
	stateDir            string
	store               string // the daemon's store file, when it said; "" otherwise
	storeWarn           int64  // the daemon's --store-warn-size, when it said; 0 otherwise
	profileDir, packDir string
	given               struct{ StateDir, ProfileDir, PackDir bool }
	hosts               []string // --host
}

// doctorLines is doctor's output: one line per check, ok, warn or FAIL, and their tally.
type doctorLines struct {
	out            io.Writer
	failed, warned int
	json           bool          // collect the checks for one JSON report instead
	checks         []CheckResult // with json
}

// check runs every check and prints one line per check.
func (d *doctor) check(ctx context.Context, c *api.Client) error {
	health, rts := d.askDaemon(ctx, c)
	programs := map[string][]string{"": nil} // host -> programs its runtimes launch
	// A host with no program to check is still checked.
	seen := func(h string) {
		if _, ok := programs[h]; !ok {
			programs[h] = nil
		}
	}
	for _, h := range d.hosts {
		seen(h)
	}
	for _, rt := range rts {
		seen(rt.Host)
		if len(rt.Argv) == 0 || rt.Status == "deregistered" {
			continue
		}
		if p := rt.Argv[0]; !slices.Contains(programs[rt.Host], p) {
			programs[rt.Host] = append(programs[rt.Host], p)
		}
	}
	names := make([]string, 0, len(programs))
	for h := range programs {
		names = append(names, h)
	}
	slices.Sort(names)
	for _, h := range names {
		d.host(ctx, h, programs[h])
		if h == "" {
			d.agents(ctx, programs[h])
		}
	}
	d.permissions(c.Socket())
	d.storeSpace()
	d.overrides()
	health()
	if d.say.json {
		rep := Report{OK: d.say.failed == 0, Failed: d.say.failed, Warned: d.say.warned, Checks: d.say.checks}
		if rep.Checks == nil {
			rep.Checks = []CheckResult{}
		}
		enc := json.NewEncoder(d.say.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if d.say.failed > 0 {
			return fmt.Errorf("%d check(s) failed", d.say.failed)
		}
		return nil
	}
	switch {
	case d.say.failed > 0:
		return fmt.Errorf("%d check(s) failed", d.say.failed)
	case d.say.warned > 0:
		fmt.Fprintf(d.say.out, "no check failed (%d warning(s))\n", d.say.warned)
	default:
		fmt.Fprintln(d.say.out, "all checks passed")
	}
	return nil
}

func (l *doctorLines) line(word, host, format string, args ...any) {
	if l.json {
		l.checks = append(l.checks, CheckResult{Level: strings.ToLower(strings.TrimSpace(word)), Host: host, Message: fmt.Sprintf(format, args...)})
		return
	}
	fmt.Fprintf(l.out, "%s  %s: %s\n", word, displayHostName(host), fmt.Sprintf(format, args...))
}

func (l *doctorLines) ok(host, format string, args ...any) { l.line("ok  ", host, format, args...) }

func (l *doctorLines) warn(host, format string, args ...any) {
	l.warned++
	l.line("warn", host, format, args...)
}

func (l *doctorLines) fail(host, format string, args ...any) {
	l.failed++
	l.line("FAIL", host, format, args...)
}

func (l *doctorLines) report(ok bool, host, format string, args ...any) {
	if ok {
		l.ok(host, format, args...)
	} else {
		l.fail(host, format, args...)
	}
}

func displayHostName(h string) string {
	if h == "" {
		return "local"
	}
	return h
}

// run runs argv on host (locally without a shell; through ssh -T otherwise) with a
// deadline, and returns its trimmed output.
func (d *doctor) run(ctx context.Context, host string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if host != "" {
		argv = controlmode.SSHArgv(d.ssh, d.config, host, argv)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = controlmode.ChildEnv(os.Environ())
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return strings.TrimSpace(buf.String()), err
}

func (d *doctor) host(ctx context.Context, host string, programs []string) {
	if host != "" {
		out, err := d.run(ctx, host, "true")
		if err != nil {
			d.say.report(false, host, "ssh cannot reach it: %v: %s", err, lastLine(out))
			return
		}
		d.say.report(true, host, "ssh reachable")
	}
	out, err := d.run(ctx, host, d.tmux, "-V")
	switch caps := controlmode.ParseVersion(out); {
	case err != nil:
		d.say.report(false, host, "no tmux: %v: %s", err, lastLine(out))
	case !caps.Known():
		d.say.report(true, host, "%s (version not understood; nudge needs %s or newer and assumes the newest behaviour)", out, controlmode.MinVersion)
	case caps.Check() != nil:
		d.say.report(false, host, "%s is too old: nudge needs tmux %s or newer", out, controlmode.MinVersion)
	default:
		d.say.report(true, host, "%s", out)
		for _, why := range caps.Degraded() {
			d.say.warn(host, "tmux %s: %s", caps, why)
		}
	}
	for _, p := range programs {
		var path string
		var err error
		if host == "" {
			path, err = exec.LookPath(p)
		} else {
			path, err = d.run(ctx, host, "command", "-v", p)
			if err == nil && path == "" {
				err = errors.New("not found")
			}
		}
		if err != nil {
			d.say.report(false, host, "agent program %s is not on PATH", filepath.Base(p))
			continue
		}
		d.say.report(true, host, "agent program %s: %s", filepath.Base(p), lastLine(path))
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
