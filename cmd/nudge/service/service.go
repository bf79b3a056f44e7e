// Package service is `nudge service`: the daemon as a user service that starts at login
// and restarts when it fails — a systemd user unit on Linux, a launchd agent on macOS.
//
// Spec describes the service (the binary, serve's flags, PATH); Unit renders it for an
// OS; Install writes the file and asks the service manager to start it; Uninstall stops
// it and removes the file. The files are plain and documented in docs/service.md, so
// a user may also write them by hand.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Name is the systemd unit's name; Label the launchd agent's.
const (
	Name  = "nudge.service"
	Label = "dev.nudge.serve"
)

// Spec is the service to run.
type Spec struct {
	Binary    string   // absolute path of the nudge binary
	ServeArgs []string // flags of `nudge serve`
	Path      string   // PATH for the daemon (tmux and the agent CLIs are found on it)
	LogDir    string   // launchd only: where stdout and stderr go (absolute: launchd expands no ~)
}

// secretFlags are serve flags whose value is a secret: a unit file is readable, and the
// daemon's command line is readable by every local user.
var secretFlags = []string{"--api-token"}

// Validate refuses a relative binary and a secret on the command line.
func (s Spec) Validate() error {
	if !filepath.IsAbs(s.Binary) {
		return fmt.Errorf("binary %q is not an absolute path", s.Binary)
	}
	for _, a := range s.ServeArgs {
		name, _, _ := strings.Cut(a, "=")
		for _, f := range secretFlags {
			if name == f || name == f[1:] {
				return fmt.Errorf("%s would put a secret in the unit file and on the daemon's command line: use %s-file (or the environment) instead", f, f)
			}
		}
	}
	return nil
}

// File is where the service's file goes for goos ("linux" or "darwin") under home and
// the XDG config dir (xdgConfig "" means home/.config).
func File(goos, home, xdgConfig string) (string, error) {
	if home == "" && (goos == "darwin" || xdgConfig == "") {
		return "", errors.New("no home directory to install the service under: set HOME")
	}
	switch goos {
	case "linux":
		if xdgConfig == "" {
			xdgConfig = filepath.Join(home, ".config")
		}
		return filepath.Join(xdgConfig, "systemd", "user", Name), nil
	case "darwin":
		return filepath.Join(home, "Library", "LaunchAgents", Label+".plist"), nil
	}
	return "", fmt.Errorf("no user service manager known on %s: run `nudge serve` from your login scripts", goos)
}

// Unit is the service file for goos.
func Unit(goos string, s Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	switch goos {
	case "linux":
		return systemdUnit(s), nil
	case "darwin":
		return launchdPlist(s), nil
	}
	_, err := File(goos, "/", "")
	return "", err
}

func systemdUnit(s Spec) string {
	argv := append([]string{s.Binary, "serve"}, s.ServeArgs...)
	for i, a := range argv {
		argv[i] = systemdQuote(a)
	}
	var b strings.Builder
	b.WriteString("# nudge: the daemon as a systemd user service (nudge service install).\n")
	b.WriteString("[Unit]\nDescription=nudge: wake AI coding agents in tmux\n\n")
	b.WriteString("[Service]\nType=simple\n")
	b.WriteString("ExecStart=" + strings.Join(argv, " ") + "\n")
	b.WriteString("Restart=on-failure\nRestartSec=2\n")
	// The tmux server the daemon starts (and every agent in it) lives in this unit's
	// cgroup; the default KillMode=control-group would end every pane on stop or restart
	// (an upgrade). Only the daemon is signalled: the agents outlive it, as by hand.
	b.WriteString("KillMode=process\n")
	if s.Path != "" {
		b.WriteString("Environment=" + systemdQuote("PATH="+s.Path) + "\n")
	}
	b.WriteString("# Secrets (NUDGE_API_TOKEN, the LLM classifier's key) go here, mode 0600; optional.\n")
	b.WriteString("EnvironmentFile=-%h/.config/nudge/service.env\n")
	b.WriteString("\n[Install]\nWantedBy=default.target\n")
	return b.String()
}

// systemdQuote quotes one word of an ExecStart or Environment line: % and $ doubled, the
// word in double quotes (backslash and quote escaped) if it holds space or a quote.
func systemdQuote(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// launchdPlist: AbandonProcessGroup keeps launchd from killing the job's process group
// (the tmux server the daemon started, and its agents) when the daemon stops or restarts.
func launchdPlist(s Spec) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- nudge: the daemon as a launchd agent (nudge service install). -->
<plist version="1.0">
<dict>
  <key>Label</key><string>` + Label + `</string>
  <key>ProgramArguments</key>
  <array>
`)
	for _, a := range append([]string{s.Binary, "serve"}, s.ServeArgs...) {
		b.WriteString("    <string>" + xmlEscape(a) + "</string>\n")
	}
	b.WriteString(`  </array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>ThrottleInterval</key><integer>2</integer>
  <key>AbandonProcessGroup</key><true/>
`)
	if s.Path != "" {
		b.WriteString("  <key>EnvironmentVariables</key><dict><key>PATH</key><string>" + xmlEscape(s.Path) + "</string></dict>\n")
	}
	if s.LogDir != "" {
		b.WriteString("  <key>StandardOutPath</key><string>" + xmlEscape(filepath.Join(s.LogDir, "nudge.log")) + "</string>\n")
		b.WriteString("  <key>StandardErrorPath</key><string>" + xmlEscape(filepath.Join(s.LogDir, "nudge.log")) + "</string>\n")
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}

// Manager runs the service manager's commands (systemctl --user, launchctl).
type Manager struct {
	GOOS string
	UID  int
	// Run runs argv and returns its combined output; nil runs it with a 30 s limit.
	Run func(ctx context.Context, argv ...string) (string, error)
}

func (m Manager) run(ctx context.Context, argv ...string) error {
	run := m.Run
	if run == nil {
		run = func(ctx context.Context, argv ...string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
			return string(out), err
		}
	}
	out, err := run(ctx, argv...)
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(out))
	}
	return nil
}

// Start loads and starts the service from file (systemctl --user enable --now; launchctl
// bootstrap), replacing a running one.
func (m Manager) Start(ctx context.Context, file string) error {
	switch m.GOOS {
	case "linux":
		if err := m.run(ctx, "systemctl", "--user", "daemon-reload"); err != nil {
			return err
		}
		if err := m.run(ctx, "systemctl", "--user", "enable", Name); err != nil {
			return err
		}
		return m.run(ctx, "systemctl", "--user", "restart", Name)
	case "darwin":
		domain := fmt.Sprintf("gui/%d", m.UID)
		m.run(ctx, "launchctl", "bootout", domain+"/"+Label) //nolint:errcheck // none loaded yet is fine
		return m.run(ctx, "launchctl", "bootstrap", domain, file)
	}
	return errors.New("no service manager on " + m.GOOS)
}

// Stop stops and unloads the service (systemctl --user disable --now; launchctl bootout).
func (m Manager) Stop(ctx context.Context) error {
	switch m.GOOS {
	case "linux":
		return m.run(ctx, "systemctl", "--user", "disable", "--now", Name)
	case "darwin":
		return m.run(ctx, "launchctl", "bootout", fmt.Sprintf("gui/%d/%s", m.UID, Label))
	}
	return errors.New("no service manager on " + m.GOOS)
}

// Write writes the service file (0644, its directory made 0755).
func Write(file, content string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// Installer installs and removes the service of one user on one system, saying what it
// did on Out.
type Installer struct {
	GOOS      string // linux or darwin
	Home      string // the user's home
	XDGConfig string // $XDG_CONFIG_HOME; "" Home/.config
	Manager   Manager
	Out       io.Writer
}

// NewInstaller is the installer for this user on goos.
func NewInstaller(goos, xdgConfig string, out io.Writer) Installer {
	home, _ := os.UserHomeDir()
	return Installer{GOOS: goos, Home: home, XDGConfig: xdgConfig, Manager: Manager{GOOS: goos, UID: os.Getuid()}, Out: out}
}

// Spec is the service running this binary (symlinks resolved) with PATH path and serve's
// args; launchd's log goes to ~/Library/Logs.
func (in Installer) Spec(args []string, path string) (Spec, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("this binary's path: %w", err)
	}
	s := Spec{Binary: exe, ServeArgs: args, Path: path}
	if in.Home != "" {
		s.LogDir = filepath.Join(in.Home, "Library", "Logs")
	}
	return s, nil
}

// Install writes the service file and, with start, has the service manager start it.
func (in Installer) Install(ctx context.Context, s Spec, start bool) error {
	unit, err := Unit(in.GOOS, s)
	if err != nil {
		return err
	}
	file, err := File(in.GOOS, in.Home, in.XDGConfig)
	if err != nil {
		return err
	}
	if err := Write(file, unit); err != nil {
		return err
	}
	fmt.Fprintln(in.Out, "wrote "+file)
	if !start {
		return nil
	}
	if err := in.Manager.Start(ctx, file); err != nil {
		return fmt.Errorf("%w (the file is written: start it by hand, or run `nudge serve`)", err)
	}
	fmt.Fprintln(in.Out, "started: it starts at login and restarts on failure (`nudge service uninstall` removes it)")
	return nil
}

// Uninstall has the service manager stop the service (with stop) and removes its file.
func (in Installer) Uninstall(ctx context.Context, stop bool) error {
	file, err := File(in.GOOS, in.Home, in.XDGConfig)
	if err != nil {
		return err
	}
	if stop {
		if err := in.Manager.Stop(ctx); err != nil {
			fmt.Fprintln(in.Out, "stop: "+err.Error())
		}
	}
	if err := os.Remove(file); err != nil {
		return fmt.Errorf("%w (nothing installed?)", err)
	}
	fmt.Fprintln(in.Out, "removed "+file)
	return nil
}
