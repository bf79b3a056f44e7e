package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/controlmode"
)

// minTmux is the oldest tmux nudge supports (control-mode flags, send-keys re-sending the
// key pressed in the Any binding).
var minTmux = [2]int{3, 2}

// doctorOpts are doctor's flags.
type doctorOpts struct {
	hosts          []string
	ssh, sshConfig string
	tmux           *tmuxFlags
}

// runDoctor checks every host in use (this machine, the hosts of the daemon's workspaces,
// and each --host): ssh reaches it, tmux there is new enough, and the programs the
// runtimes there launch are on its PATH. It exits 1 if any check fails.
func runDoctor(ctx context.Context, env *cliEnv, c *api.Client, opts doctorOpts) error {
	hosts, ssh, sshConfig, t := opts.hosts, &opts.ssh, &opts.sshConfig, opts.tmux
	out := env.stdout
	programs := map[string][]string{"": nil} // host -> programs its runtimes launch
	// A host with no program to check is still checked.
	seen := func(h string) {
		if _, ok := programs[h]; !ok {
			programs[h] = nil
		}
	}
	for _, h := range hosts {
		seen(h)
	}
	rts, err := c.Runtimes(ctx, "")
	if err != nil {
		fmt.Fprintf(out, "note  daemon not reachable (%v): checking this machine and --host only\n", err)
	}
	for _, rt := range rts {
		seen(rt.Host)
		if len(rt.Argv) == 0 || rt.Status == nudge.StatusDeregistered {
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
	d := doctor{ssh: *ssh, config: *sshConfig, tmux: t.tmux, out: out}
	for _, h := range names {
		d.host(ctx, h, programs[h])
	}
	if d.failed > 0 {
		return fmt.Errorf("doctor: %d check(s) failed", d.failed)
	}
	fmt.Fprintln(out, "all checks passed")
	return nil
}

type doctor struct {
	ssh, config, tmux string
	out               interface{ Write([]byte) (int, error) }
	failed            int
}

func (d *doctor) report(ok bool, host, format string, args ...any) {
	word := "ok  "
	if !ok {
		word = "FAIL"
		d.failed++
	}
	fmt.Fprintf(d.out, "%s  %s: %s\n", word, displayHostName(host), fmt.Sprintf(format, args...))
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
			d.report(false, host, "ssh cannot reach it: %v: %s", err, lastLine(out))
			return
		}
		d.report(true, host, "ssh reachable")
	}
	out, err := d.run(ctx, host, d.tmux, "-V")
	switch v, ok := tmuxVersion(out); {
	case err != nil:
		d.report(false, host, "no tmux: %v: %s", err, lastLine(out))
	case !ok:
		d.report(true, host, "%s (version not understood; nudge needs %d.%d or newer)", out, minTmux[0], minTmux[1])
	case v[0] < minTmux[0] || v[0] == minTmux[0] && v[1] < minTmux[1]:
		d.report(false, host, "%s is too old: nudge needs tmux %d.%d or newer", out, minTmux[0], minTmux[1])
	default:
		d.report(true, host, "%s", out)
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
			d.report(false, host, "agent program %s is not on PATH", filepath.Base(p))
			continue
		}
		d.report(true, host, "agent program %s: %s", filepath.Base(p), lastLine(path))
	}
}

// tmuxVersion parses `tmux -V` ("tmux 3.3a", "tmux next-3.5") into major and minor.
func tmuxVersion(s string) ([2]int, bool) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return [2]int{}, false
	}
	v := f[len(f)-1]
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[i+1:]
	}
	major, rest, ok := strings.Cut(v, ".")
	if !ok {
		return [2]int{}, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(rest[:end])
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{a, b}, true
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
