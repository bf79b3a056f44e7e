package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/classifier"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/flagvals"
	"github.com/nudgehq/nudge/cmd/nudge/hub"
	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/cmd/nudge/retention"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/cmd/nudge/statusfiles"
	"github.com/nudgehq/nudge/cmd/nudge/wake"
	"github.com/nudgehq/nudge/cmd/nudge/web"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// Config is everything `nudge serve` is configured with. Each room's part is its
// package's Config, started from that package's DefaultConfig(): every default is
// written once, there, and Flags binds the flags to those fields. The daemon fills
// in the parts it wires (the bus, loggers, the registry) when it opens each room.
type Config struct {
	Version             string // the daemon's version, as /v1/health and the log show it
	StateDir, Socket    string
	ProfileDir, PackDir string
	Orchestrator        string // WS/ROLE or ROLE that receives synchronisation triggers ("": the role orchestrator in the worker's workspace; none: off)
	StatusLine          bool
	LogLevel, LogFormat string
	TokenFile           string // read Auth.SharedToken from this 0600 file
	StoreCheckTimeout   time.Duration
	CPUProfile          string // hidden: write a CPU profile here (benchmarks)
	Trace               string // hidden: write an execution trace here (benchmarks)
	ProfileWindows      string // hidden: profile between SIGUSR1 and SIGUSR2 into this folder (benchmarks)

	Panes    panes.Config           // tmux and ssh, workspace roots, sweep, crash loop, start timeout
	Monitor  detector.MonitorConfig // quiet window after human input, the Any key binding
	Inject   inject.Config          // defer and hold, breaker, rate limit, loop guard, prompt size, typing, acks
	Chain    ack.ChainConfig        // resume attempts, staleness, launch grace (the crash loop is Panes')
	Schedule inject.SchedulerConfig // seed 004's gaps
	Wake     wake.Config            // wake policies: quiet, unread, dormant (seed 000 §8.4, seed 004)
	Auth     auth.Config            // the shared token, peer uids, --require-token, policy, runtime tokens
	Server   server.Config          // the metrics address, the shutdown deadline
	Events   eventstream.Config     // the kept window of /v1/events (Keep, MaxAge)
	Notify   notify.Config          // --notify-command, its timeout and pool; tmux messages
	LLM      classifier.Config      // the optional LLM classifier
	Keep     retention.Config       // what the store keeps: --retain, the audit archive, compaction
	Web      web.Config             // the web view: --web ADDR, TLS, origins
	Hub      hub.Config             // the fleet: --hub-listen, --hub, --host-name, identities (docs/hub.md)
	// StatusFiles: the status files under <state-dir>/workers (--status-files, --status-history)
	StatusFiles StatusFilesConfig
}

// StatusFilesConfig is the status files room's part: on or off, and its Config.
type StatusFilesConfig struct {
	On bool
	statusfiles.Config
}

// DefaultConfig is every room's DefaultConfig, the paths of package paths and the daemon's
// own defaults.
func DefaultConfig() Config {
	profiles, packs := paths.OverrideDirs()
	return Config{
		Version: "dev", StateDir: paths.StateDir(), ProfileDir: profiles, PackDir: packs,
		StatusLine: true, LogLevel: "info", LogFormat: "text", StoreCheckTimeout: store.DefaultCheckTimeout,
		Panes: panes.DefaultConfig(), Monitor: detector.DefaultMonitorConfig(), Inject: inject.DefaultConfig(),
		Chain: ack.DefaultChainConfig(), Schedule: inject.DefaultSchedulerConfig(), Wake: wake.DefaultConfig(), Auth: auth.DefaultConfig(),
		Server: server.DefaultConfig(), Events: eventstream.DefaultConfig(), Notify: notify.DefaultConfig(),
		LLM: classifier.Defaults(), Keep: retention.DefaultConfig(), Web: web.DefaultConfig(), Hub: hub.DefaultConfig(),
		StatusFiles: StatusFilesConfig{On: true, Config: statusfiles.DefaultConfig()},
	}
}

// Flags binds `nudge serve`'s flags to c's fields (their defaults are c's values).
func Flags(fs *pflag.FlagSet, c *Config) {
	p, in := &c.Panes, &c.Inject
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "state directory (the bbolt store, the default socket)")
	fs.StringVar(&c.Socket, "socket", "", "API socket (default $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir)")
	fs.StringVar(&p.SocketName, "tmux-socket", p.SocketName, "tmux server socket name (tmux -L)")
	fs.StringVar(&p.SocketPath, "tmux-socket-path", "", "tmux server socket path (tmux -S; wins over --tmux-socket)")
	fs.StringVar(&p.ConfigFile, "tmux-config", "", "tmux config file used when nudge starts its tmux server (tmux -f)")
	fs.StringVar(&p.Tmux, "tmux", p.Tmux, "tmux binary")
	fs.StringVar(&p.SSHHost, "host", "", "default host of a workspace spawned or registered without --host (user@host, through ssh -T); default: this machine")
	fs.StringVar(&p.SSH, "ssh", p.SSH, "ssh binary for workspaces on other hosts")
	fs.StringVar(&p.SSHConfig, "ssh-config", "", "ssh config file (ssh -F) for workspaces on other hosts; default: the user's own (~/.ssh/config)")
	fs.StringVar(&c.Server.MetricsAddr, "metrics-addr", "", "also serve /metrics on this TCP address (e.g. 127.0.0.1:9464)")
	fs.StringVar(&c.ProfileDir, "profile-dir", c.ProfileDir, "directory of agent profile overrides (NAME.json; default $XDG_CONFIG_HOME/nudge/profiles, else ~/.config/nudge/profiles; a missing one is fine)")
	fs.StringVar(&c.PackDir, "pack-dir", c.PackDir, "directory of readiness classifier pack overrides (NAME.json; default $XDG_CONFIG_HOME/nudge/packs, else ~/.config/nudge/packs; a missing one is fine)")
	fs.Var(flagvals.List{V: &p.Roots}, "root", "allowed workspace root for spawn --dir (repeatable; default: $HOME)")
	deliveryFlags(fs, c)
	fs.StringVar(&c.Orchestrator, "orchestrator", "", "the orchestrator runtime that gets a sync trigger after a human intervened in a worker pane, the worker's triggers waiting until it took it: WS/ROLE, or ROLE in the worker's workspace (default: the runtime with role orchestrator in the worker's workspace, if any; none: no sync)")
	fs.BoolVar(&c.StatusLine, "status-line", c.StatusLine, "show [role: STATE] in the status line of nudge's tmux sessions")
	fs.BoolVar(&c.StatusFiles.On, "status-files", c.StatusFiles.On, "keep a status file per runtime and one for the fleet under <state-dir>/workers (readable while the daemon is down)")
	fs.IntVar(&c.StatusFiles.History, "status-history", c.StatusFiles.History, "readiness and status changes each runtime's status file keeps")
	fs.BoolVar(&c.Monitor.BindKeys, "bind-keys", c.Monitor.BindKeys, "install the root-table Any binding that reports human keys at once (nudge's own server)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "trace, debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
	fs.StringVar(&c.Auth.SharedToken, "api-token", "", "shared secret callers must send as a Bearer token (optional; shows in ps: prefer --api-token-file or NUDGE_API_TOKEN)")
	fs.StringVar(&c.TokenFile, "api-token-file", "", "read the --api-token secret from this file (mode 0600, owned by you)")
	fs.DurationVar(&c.StoreCheckTimeout, "store-check-timeout", c.StoreCheckTimeout, "how long the start waits for the store's consistency check (a longer one finishes in the background; 0 skips it)")
	retention.Flags(fs, &c.Keep)
	web.Flags(fs, &c.Web)
	hub.Flags(fs, &c.Hub)
	authFlags(fs, &c.Auth)
	classifier.Flags(fs, &c.LLM)
	fs.DurationVar(&c.Monitor.LLMSettle, "llm-settle", c.Monitor.LLMSettle, "how long a screen the packs cannot classify must stay unchanged before the LLM classifier is asked about it")
	fs.IntVar(&c.Events.Keep, "events-keep", c.Events.Keep, "events kept for /v1/events?since= replay (the newest)")
	fs.DurationVar(&c.Events.MaxAge, "events-max-age", c.Events.MaxAge, "events older than this are dropped from the replay window")
	fs.Int64Var(&c.Events.MaxBytes, "events-max-bytes", c.Events.MaxBytes, "the kept events' size bound in bytes (a trigger's event holds its prompt)")
	fs.StringVar(&c.Notify.Command, "notify-command", "", "shell command run with each notification's event JSON on stdin (a runtime became READY, NEEDS_CONFIRMATION or ERROR, failed, or finished its task; a trigger failed)")
	fs.DurationVar(&c.Notify.Timeout, "notify-timeout", c.Notify.Timeout, "a --notify-command run longer than this is killed (its process group)")
	fs.IntVar(&c.Notify.MaxRunning, "notify-max", c.Notify.MaxRunning, "--notify-command runs at once; a notification beyond them is dropped (counted, logged)")
	fs.Var(flagvals.List{V: &c.Notify.KeepEnv}, "notify-env", "pass this variable of the daemon's environment to --notify-command although its name looks like a credential's (*_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD, ...: those are not passed); repeatable")
	fs.BoolVar(&c.Notify.NoDisplay, "no-notify-tmux", c.Notify.NoDisplay, "do not show notifications with tmux display-message to the clients attached to a workspace's session")
	fs.DurationVar(&c.Schedule.MinEvery, "schedule-min-every", c.Schedule.MinEvery, "shortest period a schedule may have")
	fs.DurationVar(&in.EchoTimeout, "echo-timeout", in.EchoTimeout, "longest wait for the typed text's echo before Enter")
	fs.DurationVar(&in.SubmitQuiet, "submit-quiet", in.SubmitQuiet, "quiet after Enter before checking that the prompt left the composer")
	fs.DurationVar(&in.SubmitTimeout, "submit-timeout", in.SubmitTimeout, "longest wait for output after Enter before that check")
	fs.DurationVar(&c.Schedule.MinGap, "schedule-gap", c.Schedule.MinGap, "least time between two scheduled prompts to one agent")
	wake.Flags(fs, &c.Wake)
	fs.DurationVar(&c.Server.ShutdownTimeout, "shutdown-timeout", c.Server.ShutdownTimeout, "how long shutdown waits for requests in flight")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile here (benchmarks)")
	fs.StringVar(&c.Trace, "trace", "", "write an execution trace here (benchmarks)")
	fs.StringVar(&c.ProfileWindows, "profile-windows", "", "profile between SIGUSR1 and SIGUSR2 into this folder (benchmarks)")
	fs.MarkHidden("cpuprofile")      //nolint:errcheck // defined just above
	fs.MarkHidden("profile-windows") //nolint:errcheck // defined just above
	fs.MarkHidden("trace")           //nolint:errcheck // defined just above
}

// deliveryFlags are the serve flags of a trigger's delivery and a runtime's life.
func deliveryFlags(fs *pflag.FlagSet, c *Config) {
	p, in := &c.Panes, &c.Inject
	fs.DurationVar(&c.Monitor.QuietWindow, "quiet-window", c.Monitor.QuietWindow, "quiet time after human input before injecting")
	fs.DurationVar(&in.DeferRecheck, "defer-recheck", in.DeferRecheck, "re-check period of a deferred trigger")
	fs.DurationVar(&in.MaxDefer, "max-defer", in.MaxDefer, "longest a trigger waits for a busy operator before DEFER_TIMEOUT and fallback")
	fs.DurationVar(&in.AsideIdle, "fallback-idle", in.AsideIdle, "how long a runtime a fallback spawned beside a kept pane (ROLE-fb-*) stays once its prompts are done, for the next fallback to reuse, before it is stopped and deregistered (0: --max-defer)")
	fs.DurationVar(&in.MaxHold, "max-hold", in.MaxHold, "longest a trigger waits for a busy, confirming, unknown, paused or cooling-down runtime before DEFER_TIMEOUT and fallback")
	fs.IntVar(&in.BreakerFailures, "breaker-failures", in.BreakerFailures, "consecutive failed triggers (no ack, send-keys error) that cool a runtime down (RUNTIME_COOLDOWN); 0 turns the breaker off")
	fs.DurationVar(&in.BreakerCooldown, "breaker-cooldown", in.BreakerCooldown, "first cooldown of a runtime's breaker; doubles after a failed probe, up to 16x")
	fs.DurationVar(&in.AckTimeout, "ack-timeout", in.AckTimeout, "ack timeout per attempt")
	fs.IntVar(&in.AckRetries, "ack-retries", in.AckRetries, "retries after an ack timeout before the fallback chain")
	fs.Var(flagvals.Backoff{V: &in.Backoff}, "ack-backoff", "backoff before each retry")
	fs.Var(flagvals.Rate{N: &in.RateLimit, Per: &in.RatePer}, "rate-limit", "triggers per thread of an agent, and to an agent over all its threads and names")
	fs.IntVar(&in.LoopTurns, "loop-turns", in.LoopTurns, "triggers on a thread without progress before THREAD_AUTO_BLOCKED")
	fs.IntVar(&in.LoopRepeats, "loop-repeats", in.LoopRepeats, "identical prompts on a thread without progress before THREAD_AUTO_BLOCKED")
	fs.IntVar(&in.MaxPrompt, "max-prompt", in.MaxPrompt, "largest prompt in bytes after sanitizing")
	fs.DurationVar(&p.SweepInterval, "sweep", p.SweepInterval, "reconciliation sweep period (events drive it too)")
	fs.IntVar(&c.Chain.ResumeAttempts, "resume-attempts", c.Chain.ResumeAttempts, "resume attempts before spawning fresh")
	fs.DurationVar(&c.Chain.StaleAfter, "stale-after", c.Chain.StaleAfter, "a session whose heartbeat is older is not resumed: spawn")
	fs.IntVar(&p.CrashLoopFailures, "crash-loop", p.CrashLoopFailures, "failures within --crash-window that make a crash loop")
	fs.DurationVar(&p.CrashLoopWindow, "crash-window", p.CrashLoopWindow, "crash loop window")
	fs.DurationVar(&p.RestartMaxDelay, "restart-max-delay", p.RestartMaxDelay, "most time between a crash and its automatic restart (the wait doubles with each crash of a recovery)")
	fs.DurationVar(&p.Retention, "runtime-retention", p.Retention, "a runtime offline, failed or exited this long (and not being restarted) is dropped from the fleet (nudge ls --all still shows it); negative: never")
	fs.DurationVar(&p.ClosedGrace, "closed-grace", p.ClosedGrace, "a worker window a human closes is recreated, but closed again within this time it is dropped, not recreated; negative: always recreate")
	fs.DurationVar(&p.RecoveryDeadline, "recovery-deadline", p.RecoveryDeadline, "a runtime still crashing this long after its first crash is failed")
	fs.DurationVar(&p.StartTimeout, "start-timeout", p.StartTimeout, "a starting agent that has not shown READY by then is failed (a profile's start_timeout wins)")
	fs.DurationVar(&p.StopTimeout, "stop-timeout", p.StopTimeout, "how long nudge stop sends C-c before it signals the pane's processes (SIGHUP, SIGTERM, SIGKILL)")
	fs.DurationVar(&p.KillGrace, "kill-grace", p.KillGrace, "wait after each signal that ends a pane's program on a stop or relaunch; a program that outlives SIGKILL's fails it (STOP_FAILED, SPAWN_FAILED)")
	fs.DurationVar(&p.CommandTimeout, "tmux-timeout", p.CommandTimeout, "a tmux command run by the daemon that has not answered by then fails")
	fs.DurationVar(&c.Chain.LaunchGrace, "launch-grace", c.Chain.LaunchGrace, "a resume or spawn launch must stay up this long to count as started")
}

// Complete fills derived defaults and checks the config; its errors are the user's (a
// flag to fix).
func (c *Config) Complete() error {
	if c.TokenFile != "" && c.Auth.SharedToken != "" {
		return errors.New("--api-token and --api-token-file are exclusive")
	}
	if c.StateDir == "" {
		return errors.New("--state-dir is empty")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return err
	}
	c.StateDir = abs
	if c.Socket == "" {
		c.Socket = paths.Socket(c.StateDir)
	}
	if err := c.Keep.Complete(c.StateDir); err != nil {
		return err
	}
	roots := &c.Panes.Roots
	if len(*roots) == 0 {
		if h, err := os.UserHomeDir(); err == nil {
			*roots = []string{h}
		}
	}
	for i, r := range *roots {
		if (*roots)[i], err = filepath.Abs(r); err != nil {
			return err
		}
	}
	in := &c.Inject
	switch {
	case in.AckRetries < 0 || c.Chain.ResumeAttempts < 0 || c.Panes.CrashLoopFailures < 0 || in.BreakerFailures < 0:
		return errors.New("counts must not be negative")
	case c.Monitor.QuietWindow < 0 || in.MaxDefer <= 0 || in.DeferRecheck <= 0 || in.AckTimeout <= 0 || in.MaxHold <= 0 || in.BreakerCooldown <= 0 ||
		c.Panes.StartTimeout <= 0 || c.Panes.StopTimeout <= 0 || c.Panes.KillGrace <= 0 || c.Panes.CommandTimeout <= 0:
		return errors.New("durations must be positive")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return errors.New("--log-format must be text or json")
	}
	if err := c.Wake.Validate(); err != nil {
		return err
	}
	if err := c.LLM.Validate(); err != nil {
		return err
	}
	if c.Web.Addr != "" {
		if err := c.Web.Validate(); err != nil {
			return err
		}
	}
	if hclog.LevelFromString(c.LogLevel) == hclog.NoLevel {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// LoadToken reads --api-token-file, warns about a --api-token given on the command line
// (every local user can read it with ps), and takes NUDGE_API_TOKEN out of the daemon's
// own environment once read.
func (c *Config) LoadToken(warn io.Writer) error {
	fromEnv, ok := os.LookupEnv("NUDGE_API_TOKEN")
	onCmdline := c.Auth.SharedToken != "" && (!ok || fromEnv != c.Auth.SharedToken)
	os.Unsetenv("NUDGE_API_TOKEN") //nolint:errcheck // read already; never inherited
	if c.TokenFile != "" {
		tok, err := readSecretFile(c.TokenFile)
		if err != nil {
			return fmt.Errorf("--api-token-file: %w", err)
		}
		c.Auth.SharedToken = tok
		return nil
	}
	if onCmdline && c.Auth.SharedToken != "" {
		fmt.Fprintln(warn, "nudge serve: warning: --api-token on the command line is readable by every local user (ps, /proc); use --api-token-file or NUDGE_API_TOKEN")
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

func newLogger(cfg Config, out io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name: "nudge", Level: hclog.LevelFromString(cfg.LogLevel),
		Output: out, JSONFormat: cfg.LogFormat == "json",
	})
}
