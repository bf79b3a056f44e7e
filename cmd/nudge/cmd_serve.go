package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/profiling"
)

// serveCmd is `nudge serve`: the daemon, in the foreground until a signal. Its flags bind
// to serveConfig (serveFlags); the daemon itself is openDaemon, Run and Close.
func serveCmd(env *cliEnv) *cobra.Command {
	cfg := defaultServeConfig()
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "run the daemon",
		Long: "Run the daemon in the foreground: one tmux -C connection per workspace, the API on a unix\n" +
			"socket (0600). Every flag is also read from NUDGE_<FLAG>.",
		Example: "  nudge serve &\n  NUDGE_API_TOKEN=... nudge serve --metrics-addr 127.0.0.1:9464",
		Args:    exactArgs(0, "no arguments"),
	}
	serveFlags(cmd.Flags(), &cfg)
	cmd.Flags().SortFlags = false // grouped as serveFlags writes them
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cfg.complete(); err != nil {
			return &usageError{err.Error()}
		}
		if err := cfg.loadToken(env); err != nil {
			return err
		}
		if err := cfg.LLM.LoadKey(defaultConfigDir()); err != nil {
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
		d, err := openDaemon(cmd.Context(), cfg, env)
		if err != nil {
			return err
		}
		runErr := d.Run(cmd.Context())
		closeErr := d.Close()
		return errors.Join(runErr, closeErr)
	}
	return cmd
}
