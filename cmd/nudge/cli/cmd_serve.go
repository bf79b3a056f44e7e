package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/paths"
	"github.com/nudgehq/nudge/cmd/nudge/profiling"
)

// serveCmd is `nudge serve`: the daemon, in the foreground until a signal. Its flags bind
// to daemon.Config (serveFlags); the daemon itself is openDaemon, Run and Close.
func serveCmd(env *cliEnv) *cobra.Command {
	cfg := daemon.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "run the daemon",
		Long: "Run the daemon in the foreground: one tmux -C connection per workspace, the API on a unix\n" +
			"socket (0600). Every flag is also read from NUDGE_<FLAG>.",
		Example: "  nudge serve &\n  NUDGE_API_TOKEN=... nudge serve --metrics-addr 127.0.0.1:9464",
		Args:    exactArgs(0, "no arguments"),
	}
	daemon.Flags(cmd.Flags(), &cfg)
	cmd.Flags().SortFlags = false // grouped as serveFlags writes them
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg.Version = version // what /v1/health, the log and the web view say
		if err := cfg.Complete(); err != nil {
			return &usageError{err.Error()}
		}
		if err := cfg.LoadToken(env.stderr); err != nil {
			return err
		}
		if err := cfg.LLM.LoadKey(paths.ConfigDir()); err != nil {
			return err
		}
		if cfg.CPUProfile != "" {
			stop, err := profiling.CPU(cfg.CPUProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		if cfg.ProfileWindows != "" {
			stop, err := profiling.Windows(cfg.ProfileWindows)
			if err != nil {
				return err
			}
			defer stop()
		}
		if cfg.Trace != "" {
			stop, err := profiling.Trace(cfg.Trace)
			if err != nil {
				return err
			}
			defer stop()
		}
		d, err := daemon.Open(cmd.Context(), cfg, env.stderr)
		if err != nil {
			return err
		}
		runErr := d.Run(cmd.Context())
		closeErr := d.Close()
		return errors.Join(runErr, closeErr)
	}
	return cmd
}
