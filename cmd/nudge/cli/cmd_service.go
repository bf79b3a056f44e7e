package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/service"
)

func serviceCmd(env *cliEnv) *cobra.Command {
	return groupCmd("service", "run the daemon as a user service (systemd on Linux, launchd on macOS)",
		serviceInstallCmd(env), serviceUninstallCmd(env))
}

func serviceInstallCmd(env *cliEnv) *cobra.Command {
	var print, noStart bool
	var goos string
	cmd := &cobra.Command{
		Use:   "install [--print] [--no-start] [-- SERVE-FLAGS...]",
		Short: "install the daemon as a user service: it starts at login and restarts on failure",
		Long: "Write a systemd user unit (~/.config/systemd/user/" + service.Name + ") on Linux or a launchd agent\n" +
			"(~/Library/LaunchAgents/" + service.Label + ".plist) on macOS running `nudge serve SERVE-FLAGS` with\n" +
			"this binary and your PATH, then enable and start it. Secrets never go in it: put\n" +
			"NUDGE_API_TOKEN and the LLM key in ~/.config/nudge/service.env (0600) on Linux.",
		Example: "  nudge service install -- --root ~/src\n  nudge service install --print --os darwin",
	}
	cmd.Flags().BoolVar(&print, "print", false, "print the unit file instead of installing it")
	cmd.Flags().BoolVar(&noStart, "no-start", false, "write the file only; do not ask systemctl or launchctl to start it")
	cmd.Flags().StringVar(&goos, "os", runtime.GOOS, "the system to write for: linux or darwin")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if sc := serveCmd(env); sc.ParseFlags(args) != nil || sc.Flags().NArg() > 0 {
			return usagef("serve flags %q: %v (want flags of nudge serve after --)", args, sc.ParseFlags(args))
		}
		in := service.NewInstaller(goos, env.getenv("XDG_CONFIG_HOME"), env.stdout)
		spec, err := in.Spec(args, env.getenv("PATH"))
		if err != nil {
			return err
		}
		unit, err := service.Unit(goos, spec)
		if err != nil {
			return usagef("%v", err)
		}
		if print {
			_, err := fmt.Fprint(env.stdout, unit)
			return err
		}
		return in.Install(cmd.Context(), spec, !noStart)
	}
	return cmd
}

func serviceUninstallCmd(env *cliEnv) *cobra.Command {
	var noStop bool
	var goos string
	cmd := &cobra.Command{Use: "uninstall [--no-stop]", Short: "stop the user service and remove its file", Args: exactArgs(0, "no arguments")}
	cmd.Flags().BoolVar(&noStop, "no-stop", false, "remove the file only")
	cmd.Flags().StringVar(&goos, "os", runtime.GOOS, "the system: linux or darwin")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return service.NewInstaller(goos, env.getenv("XDG_CONFIG_HOME"), env.stdout).Uninstall(cmd.Context(), !noStop)
	}
	return cmd
}
