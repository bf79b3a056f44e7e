package daemon

// The web view (serve --web ADDR) and `nudge web pair`.

import (
	"path/filepath"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/cmd/nudge/web"
	"github.com/nudgehq/nudge/controlmode"
)

// openWeb opens the web view: the app on its own TCP address, its /api served by the
// socket API's own handlers, which see a device token as the caller (the same verbs,
// rules, audit and events as the CLI). nil when --web is not given.
func openWeb(cfg Config, d *Daemon) (*web.Server, error) {
	if cfg.Web.Addr == "" {
		return nil, nil
	}
	deps := serverDeps(d)
	deps.Auth = web.TokenAuthenticator{Tokens: d.auth}
	sc := cfg.Server
	sc.Version, sc.Logger = d.cfg.Version, d.log.Named("web")
	wc := cfg.Web
	wc.Logger = d.log.Named("web")
	if wc.VAPIDKeyFile == "" {
		wc.VAPIDKeyFile = filepath.Join(cfg.StateDir, "web-push-vapid.key")
	}
	p := cfg.Panes
	return web.Open(wc, web.Deps{
		API: server.New(sc, deps).Handler(), Tokens: d.auth, Runtimes: d.reg,
		Terminal: web.TmuxTerminal{Base: controlmode.Config{Tmux: p.Tmux, SocketName: p.SocketName, SocketPath: p.SocketPath,
			ConfigFile: p.ConfigFile, SSH: p.SSH, SSHConfig: p.SSHConfig, Logger: d.log.Named("web")}},
		Keys: &web.PaneKeys{Conn: func(ws string) (web.Doer, error) { return d.reg.Conn(ws) }, Beside: d.pipe.Beside, Keyed: d.mon.Keyed},
		Audit: func(rec nudge.AuditRecord) {
			if _, err := d.db.AuditLog().AppendAudit(rec); err != nil {
				d.log.Error("audit", "event", rec.Event, "err", err)
			}
		},
	})
}
