package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/store"
)

// serveConfig is everything `nudge serve` is configured with.
type serveConfig struct {
	StateDir, Socket       string
	TmuxSocket, TmuxPath   string
	TmuxConfig             string
	Tmux                   string
	SSHHost                string
	SSH, SSHConfig         string
	MetricsAddr            string
	ProfileDir, PackDir    string
	Roots                  []string
	QuietWindow            time.Duration
	DeferRecheck, MaxDefer time.Duration
	MaxHold                time.Duration
	BreakerFailures        int
	BreakerCooldown        time.Duration
	AckTimeout             time.Duration
	AckRetries             int
	Backoff                []time.Duration
	RateLimit              int
	RatePer                time.Duration
	LoopTurns, LoopRepeats int
	MaxPrompt              int
	Sweep                  time.Duration
	ResumeAttempts         int
	StaleAfter             time.Duration
	CrashLoop              int
	CrashWindow            time.Duration
	StartTimeout           time.Duration // starting → ready, for a profile that sets no start_timeout
	LaunchGrace            time.Duration
	Orchestrator           string // WS/ROLE that receives synchronisation triggers
	StatusLine             bool
	BindKeys               bool
	LogLevel, LogFormat    string
	Token                  string // optional shared secret
	TokenFile              string // ... read from this 0600 file
	StoreCheckTimeout      time.Duration
	authConfig             // tokens, policy (auth.go)
	llmConfig              // the optional LLM classifier (llmconfig.go)
	AllowUIDs              []int
	ShutdownTimeout        time.Duration
	Events                 eventstream.Config // the kept window of /v1/events (Keep, MaxAge)
	Notify                 notify.Config      // --notify-command, its timeout and pool; tmux messages
	ScheduleGap            time.Duration
	ScheduleMinEvery       time.Duration
	EchoTimeout            time.Duration
	SubmitQuiet            time.Duration
	SubmitTimeout          time.Duration
	CPUProfile             string // hidden: write a CPU profile here (benchmarks)
	Trace                  string // hidden: write an execution trace here (benchmarks)
}

func defaultServeConfig() serveConfig {
	state := defaultStateDir()
	profiles, packs := defaultOverrideDirs()
	return serveConfig{
		StateDir: state, ProfileDir: profiles, PackDir: packs, Tmux: "tmux", TmuxSocket: "nudge",
		QuietWindow: 20 * time.Second, DeferRecheck: 5 * time.Second, MaxDefer: 60 * time.Second,
		MaxHold: 10 * time.Minute, BreakerFailures: 3, BreakerCooldown: 2 * time.Minute,
		AckTimeout: 8 * time.Second, AckRetries: 2, Backoff: []time.Duration{2 * time.Second, 4 * time.Second},
		RateLimit: 10, RatePer: time.Minute, LoopTurns: 20, LoopRepeats: 3, MaxPrompt: 64 << 10,
		Sweep: 5 * time.Second, ResumeAttempts: 2, StaleAfter: 12 * time.Hour,
		CrashLoop: 3, CrashWindow: 15 * time.Minute, LaunchGrace: 1500 * time.Millisecond, StartTimeout: 2 * time.Minute,
		StatusLine: true, BindKeys: true,
		LogLevel: "info", LogFormat: "text", ShutdownTimeout: 5 * time.Second,
		ScheduleGap: 5 * time.Minute, ScheduleMinEvery: time.Minute,
		EchoTimeout: 2 * time.Second, SubmitQuiet: 250 * time.Millisecond, SubmitTimeout: 3 * time.Second,
		StoreCheckTimeout: store.DefaultCheckTimeout, llmConfig: defaultLLMConfig(),
		Events: eventstream.DefaultConfig(), Notify: notify.DefaultConfig(),
	}
}

// listFlag is a repeatable or comma-separated string flag.
type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Type() string { return "list" }

func (l listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.v = append(*l.v, p)
		}
	}
	return nil
}

// rateFlag parses "10/min", "5/30s", "100/h".
type rateFlag struct {
	n   *int
	per *time.Duration
}

func (r rateFlag) String() string {
	if r.n == nil {
		return ""
	}
	return fmt.Sprintf("%d/%s", *r.n, *r.per)
}

func (r rateFlag) Type() string { return "rate" }

func (r rateFlag) Set(s string) error {
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return errors.New("want N/UNIT, e.g. 10/min")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return errors.New("want a positive count, e.g. 10/min")
	}
	per, ok := map[string]time.Duration{"s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour, "hour": time.Hour}[unit]
	if !ok {
		if per, err = time.ParseDuration(unit); err != nil || per <= 0 {
			return errors.New("unit must be s, min, h or a Go duration")
		}
	}
	*r.n, *r.per = n, per
	return nil
}

// backoffFlag parses "2s,4s".
type backoffFlag struct{ v *[]time.Duration }

func (b backoffFlag) String() string {
	if b.v == nil {
		return ""
	}
	var s []string
	for _, d := range *b.v {
		s = append(s, d.String())
	}
	return strings.Join(s, ",")
}

func (b backoffFlag) Type() string { return "durations" }

func (b backoffFlag) Set(s string) error {
	var out []time.Duration
	for _, p := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			return fmt.Errorf("bad backoff %q", p)
		}
		out = append(out, d)
	}
	*b.v = out
	return nil
}

func serveFlags(fs *pflag.FlagSet, c *serveConfig) {
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "state directory (the bbolt store, the default socket)")
	fs.StringVar(&c.Socket, "socket", "", "API socket (default $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir)")
	fs.StringVar(&c.TmuxSocket, "tmux-socket", c.TmuxSocket, "tmux server socket name (tmux -L)")
	fs.StringVar(&c.TmuxPath, "tmux-socket-path", "", "tmux server socket path (tmux -S; wins over --tmux-socket)")
	fs.StringVar(&c.TmuxConfig, "tmux-config", "", "tmux config file used when nudge starts its tmux server (tmux -f)")
	fs.StringVar(&c.Tmux, "tmux", c.Tmux, "tmux binary")
	fs.StringVar(&c.SSHHost, "host", "", "default host of a workspace spawned or registered without --host (user@host, through ssh -T); default: this machine")
	fs.StringVar(&c.SSH, "ssh", "ssh", "ssh binary for workspaces on other hosts")
	fs.StringVar(&c.SSHConfig, "ssh-config", "", "ssh config file (ssh -F) for workspaces on other hosts; default: the user's own (~/.ssh/config)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "also serve /metrics on this TCP address (e.g. 127.0.0.1:9464)")
	fs.StringVar(&c.ProfileDir, "profile-dir", c.ProfileDir, "directory of agent profile overrides (NAME.json; default $XDG_CONFIG_HOME/nudge/profiles, else ~/.config/nudge/profiles; a missing one is fine)")
	fs.StringVar(&c.PackDir, "pack-dir", c.PackDir, "directory of readiness classifier pack overrides (NAME.json; default $XDG_CONFIG_HOME/nudge/packs, else ~/.config/nudge/packs; a missing one is fine)")
	fs.Var(listFlag{&c.Roots}, "root", "allowed workspace root for spawn --dir (repeatable; default: $HOME)")
	fs.DurationVar(&c.QuietWindow, "quiet-window", c.QuietWindow, "quiet time after human input before injecting")
	fs.DurationVar(&c.DeferRecheck, "defer-recheck", c.DeferRecheck, "re-check period of a deferred trigger")
	fs.DurationVar(&c.MaxDefer, "max-defer", c.MaxDefer, "longest a trigger waits for a busy operator before DEFER_TIMEOUT and fallback")
	fs.DurationVar(&c.MaxHold, "max-hold", c.MaxHold, "longest a trigger waits for a busy, confirming, unknown, paused or cooling-down runtime before DEFER_TIMEOUT and fallback")
	fs.IntVar(&c.BreakerFailures, "breaker-failures", c.BreakerFailures, "consecutive failed triggers (no ack, send-keys error) that cool a runtime down (RUNTIME_COOLDOWN); 0 turns the breaker off")
	fs.DurationVar(&c.BreakerCooldown, "breaker-cooldown", c.BreakerCooldown, "first cooldown of a runtime's breaker; doubles after a failed probe, up to 16x")
	fs.DurationVar(&c.AckTimeout, "ack-timeout", c.AckTimeout, "ack timeout per attempt")
	fs.IntVar(&c.AckRetries, "ack-retries", c.AckRetries, "retries after an ack timeout before the fallback chain")
	fs.Var(backoffFlag{&c.Backoff}, "ack-backoff", "backoff before each retry (default 2s,4s)")
	fs.Var(rateFlag{&c.RateLimit, &c.RatePer}, "rate-limit", "triggers per thread and agent (default 10/min)")
	fs.IntVar(&c.LoopTurns, "loop-turns", c.LoopTurns, "triggers on a thread without progress before THREAD_AUTO_BLOCKED")
	fs.IntVar(&c.LoopRepeats, "loop-repeats", c.LoopRepeats, "identical prompts on a thread without progress before THREAD_AUTO_BLOCKED")
	fs.IntVar(&c.MaxPrompt, "max-prompt", c.MaxPrompt, "largest prompt in bytes after sanitizing")
	fs.DurationVar(&c.Sweep, "sweep", c.Sweep, "reconciliation sweep period (events drive it too)")
	fs.IntVar(&c.ResumeAttempts, "resume-attempts", c.ResumeAttempts, "resume attempts before spawning fresh")
	fs.DurationVar(&c.StaleAfter, "stale-after", c.StaleAfter, "a session whose heartbeat is older is not resumed: spawn")
	fs.IntVar(&c.CrashLoop, "crash-loop", c.CrashLoop, "failures within --crash-window that make a crash loop")
	fs.DurationVar(&c.CrashWindow, "crash-window", c.CrashWindow, "crash loop window")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "a starting agent that has not shown READY by then is failed (a profile's start_timeout wins)")
	fs.DurationVar(&c.LaunchGrace, "launch-grace", c.LaunchGrace, "a resume or spawn launch must stay up this long to count as started")
	fs.StringVar(&c.Orchestrator, "orchestrator", "", "WS/ROLE of the orchestrator runtime that gets a sync trigger after a human intervened in a worker pane")
	fs.BoolVar(&c.StatusLine, "status-line", c.StatusLine, "show [role: STATE] in the status line of nudge's tmux sessions")
	fs.BoolVar(&c.BindKeys, "bind-keys", c.BindKeys, "install the root-table Any binding that reports human keys at once (nudge's own server)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "trace, debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
	fs.StringVar(&c.Token, "api-token", "", "shared secret callers must send as a Bearer token (optional; shows in ps: prefer --api-token-file or NUDGE_API_TOKEN)")
	fs.StringVar(&c.TokenFile, "api-token-file", "", "read the --api-token secret from this file (mode 0600, owned by you)")
	fs.DurationVar(&c.StoreCheckTimeout, "store-check-timeout", c.StoreCheckTimeout, "how long the start waits for the store's consistency check (a longer one finishes in the background; 0 skips it)")
	authFlags(fs, c)
	llmFlags(fs, &c.llmConfig)
	fs.DurationVar(&c.ScheduleMinEvery, "schedule-min-every", c.ScheduleMinEvery, "shortest period a schedule may have")
	fs.DurationVar(&c.EchoTimeout, "echo-timeout", c.EchoTimeout, "longest wait for the typed text's echo before Enter")
	fs.DurationVar(&c.SubmitQuiet, "submit-quiet", c.SubmitQuiet, "quiet after Enter before checking that the prompt left the composer")
	fs.DurationVar(&c.SubmitTimeout, "submit-timeout", c.SubmitTimeout, "longest wait for output after Enter before that check")
	fs.DurationVar(&c.ScheduleGap, "schedule-gap", c.ScheduleGap, "least time between two scheduled prompts to one agent (seed 004)")
	fs.IntVar(&c.Events.Keep, "events-keep", c.Events.Keep, "events kept for /v1/events?since= replay (the newest)")
	fs.DurationVar(&c.Events.MaxAge, "events-max-age", c.Events.MaxAge, "events older than this are dropped from the replay window")
	fs.StringVar(&c.Notify.Command, "notify-command", "", "shell command run with each notification's event JSON on stdin (a runtime became READY, NEEDS_CONFIRMATION or ERROR; a trigger failed)")
	fs.DurationVar(&c.Notify.Timeout, "notify-timeout", c.Notify.Timeout, "a --notify-command run longer than this is killed (its process group)")
	fs.IntVar(&c.Notify.MaxRunning, "notify-max", c.Notify.MaxRunning, "--notify-command runs at once; a notification beyond them is dropped (counted, logged)")
	fs.BoolVar(&c.Notify.NoDisplay, "no-notify-tmux", c.Notify.NoDisplay, "do not show notifications with tmux display-message to the clients attached to a workspace's session")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long shutdown waits for requests in flight")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile here (benchmarks)")
	fs.StringVar(&c.Trace, "trace", "", "write an execution trace here (benchmarks)")
	fs.MarkHidden("cpuprofile") //nolint:errcheck // defined just above
	fs.MarkHidden("trace")      //nolint:errcheck // defined just above
}

// complete fills derived defaults and checks the config.
func (c *serveConfig) complete() error {
	if c.StateDir == "" {
		return errors.New("--state-dir is empty")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return err
	}
	c.StateDir = abs
	if c.Socket == "" {
		c.Socket = defaultSocket(c.StateDir)
	}
	if len(c.Roots) == 0 {
		if h, err := os.UserHomeDir(); err == nil {
			c.Roots = []string{h}
		}
	}
	for i, r := range c.Roots {
		if c.Roots[i], err = filepath.Abs(r); err != nil {
			return err
		}
	}
	switch {
	case c.AckRetries < 0 || c.ResumeAttempts < 0 || c.CrashLoop < 0 || c.BreakerFailures < 0:
		return errors.New("counts must not be negative")
	case c.QuietWindow < 0 || c.MaxDefer <= 0 || c.DeferRecheck <= 0 || c.AckTimeout <= 0 || c.MaxHold <= 0 || c.BreakerCooldown <= 0 ||
		c.StartTimeout <= 0:
		return errors.New("durations must be positive")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return errors.New("--log-format must be text or json")
	}
	if err := c.llmConfig.validate(); err != nil {
		return err
	}
	if hclog.LevelFromString(c.LogLevel) == hclog.NoLevel {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// loadToken reads --api-token-file, warns about a --api-token given on the command line
// (every local user can read it with ps), and takes NUDGE_API_TOKEN out of the daemon's
// own environment once read.
func (c *serveConfig) loadToken(env *cliEnv) error {
	fromEnv, ok := os.LookupEnv("NUDGE_API_TOKEN")
	onCmdline := c.Token != "" && (!ok || fromEnv != c.Token)
	os.Unsetenv("NUDGE_API_TOKEN") //nolint:errcheck // read already; never inherited
	if c.TokenFile != "" {
		if c.Token != "" {
			return usagef("--api-token and --api-token-file are exclusive")
		}
		tok, err := readSecretFile(c.TokenFile)
		if err != nil {
			return fmt.Errorf("--api-token-file: %w", err)
		}
		c.Token = tok
		return nil
	}
	if onCmdline && c.Token != "" {
		fmt.Fprintln(env.stderr, "nudge serve: warning: --api-token on the command line is readable by every local user (ps, /proc); use --api-token-file or NUDGE_API_TOKEN")
	}
	return nil
}

// readSecretFile reads a secret from a regular file that only its owner can read.
func readSecretFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s must be a regular file with mode 0600 (is %s)", path, fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}

func newLogger(cfg serveConfig, env *cliEnv) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name: "nudge", Level: hclog.LevelFromString(cfg.LogLevel),
		Output: env.stderr, JSONFormat: cfg.LogFormat == "json",
	})
}

// startCPUProfile writes a CPU profile of the daemon to path until stop is called, and
// then its allocation profile to path.allocs.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		// The allocations beside it (go tool pprof -sample_index=alloc_space): the hot
		// path's garbage is what the GC's share of a trigger's CPU comes from.
		if af, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(af, 0)
			af.Close()
		}
	}, nil
}

// startTrace writes an execution trace of the daemon to path until stop is called (go
// tool trace; the hot path marks its stages as trace regions).
func startTrace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}
