package doctor

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// CheckTmux asks the daemon's tmux binary for its version (`tmux -V`, through ssh when
// --ssh-host is set), refuses a tmux older than controlmode.MinVersion and logs what is
// degraded on it. A tmux that cannot be run is left to the connections to report (the
// registry retries them); the result is then nil.
func CheckTmux(ctx context.Context, p panes.Config, log hclog.Logger) (*api.Tmux, error) {
	bin := p.Tmux
	if bin == "" {
		bin = "tmux"
	}
	argv := []string{bin, "-V"}
	if p.SSHHost != "" {
		argv = controlmode.SSHArgv(p.SSH, p.SSHConfig, p.SSHHost, argv)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = controlmode.ChildEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		log.Warn("cannot ask tmux its version", "tmux", bin, "error", err)
		return nil, nil
	}
	caps := controlmode.ParseVersion(string(out))
	if err := caps.Check(); err != nil {
		return nil, err
	}
	t := &api.Tmux{Version: caps.Version, Degraded: caps.Degraded()}
	for _, why := range t.Degraded {
		log.Warn("tmux "+caps.Version+" degrades nudge", "what", why)
	}
	if len(t.Degraded) == 0 {
		log.Debug("tmux", "version", strings.TrimSpace(caps.Version))
	}
	return t, nil
}
