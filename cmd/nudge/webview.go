package main

// The web view (serve --web ADDR) and `nudge web pair`.

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/cmd/nudge/web"
	"github.com/nudgehq/nudge/controlmode"
)

func webFlags(fs *pflag.FlagSet, c *web.Config) {
	fs.StringVar(&c.Addr, "web", "", "serve the web view on this address (off by default; e.g. 127.0.0.1:8088; another than loopback needs --web-tls-cert/--web-tls-key or --web-insecure)")
	fs.StringVar(&c.TLSCert, "web-tls-cert", "", "serve the web view over HTTPS with this certificate (PEM)")
	fs.StringVar(&c.TLSKey, "web-tls-key", "", "the key of --web-tls-cert (PEM)")
	fs.BoolVar(&c.Insecure, "web-insecure", false, "allow plain HTTP for the web view on an address that is not loopback (a network you trust)")
	fs.Var(listFlag{&c.Origins}, "web-origin", "also accept the web view's pages from this origin, e.g. a TLS proxy in front (https://box.tailnet.ts.net); repeatable")
	fs.StringVar(&c.PushSubject, "web-push-contact", "", "the contact (mailto: or https:) Web Push services may reach you at (default mailto:nudge@localhost)")
	fs.StringVar(&c.PublicURL, "web-url", "", "base of the links nudge web pair prints (default: the first --web-origin, else the --web address)")
}

// openWeb opens the web view: the app on its own TCP address, its /api served by the
// socket API's own handlers, which see a device token as the caller (the same verbs,
// rules, audit and events as the CLI). nil when --web is not given.
func openWeb(cfg serveConfig, d *daemon) (*web.Server, error) {
	if cfg.Web.Addr == "" {
		return nil, nil
	}
	deps := serverDeps(d)
	deps.Auth = web.TokenAuthenticator{Tokens: d.auth}
	sc := cfg.Server
	sc.Version, sc.Logger = version, d.log.Named("web")
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
		Audit: func(rec nudge.AuditRecord) {
			if _, err := d.db.AppendAudit(rec); err != nil {
				d.log.Error("audit", "event", rec.Event, "err", err)
			}
		},
	})
}

func webCmd(env *cliEnv) *cobra.Command {
	return groupCmd("web", "the web view (serve --web ADDR): pair a browser", webPairCmd(env))
}

func webPairCmd(env *cliEnv) *cobra.Command {
	var b api.WebPairRequest
	cmd := &cobra.Command{
		Use:   "pair [--scope read|answer|trigger|operate] [--name NAME] [--workspace WS] [--ttl 720h]",
		Short: "print a one-time link (and its QR code) that pairs a browser with the web view",
		Long: "Print a link that, opened once within 10 minutes, gives that browser a device token (subject\n" +
			"web:NAME) with the scope asked for: read (see only), answer (and answer dialogs), trigger (and\n" +
			"send prompts) or operate (and pause and resume). It is listed and revoked with `nudge token`.\n" +
			"The code is in the link's fragment (never sent to a server, never in a log) and leaves the\n" +
			"address bar when the page opens.",
		Example: "  nudge web pair --scope answer --name phone\n  nudge token ls; nudge token revoke ID",
		Args:    exactArgs(0, "no arguments"),
	}
	o := addClientFlags(cmd)
	out := addOutputFlags(cmd, "table")
	cmd.Flags().StringVar(&b.Scope, "scope", "read", "what the browser may do: read, answer, trigger or operate")
	cmd.Flags().StringVar(&b.Name, "name", "browser", "the device's name (its token's subject is web:NAME)")
	cmd.Flags().Var(listFlag{&b.Workspaces}, "workspace", "workspaces it may see (repeatable; default: all yours)")
	cmd.Flags().StringVar(&b.TTL, "ttl", web.DefaultDeviceTTL.String(), "the device token's lifetime")
	noQR := cmd.Flags().Bool("no-qr", false, "print the link only")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		ctx, cancel := shortCtx(cmd.Context())
		defer cancel()
		c := o.client(env)
		defer c.Close()
		p, err := c.WebPair(ctx, b)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.stdout, p)
		}
		fmt.Fprintln(env.stdout, p.URL)
		if !*noQR {
			fmt.Fprint(env.stdout, qrText(p.URL))
		}
		fmt.Fprintf(env.stderr, "opens once, until %s: a device token %s with verbs %s on workspaces %s for %s\n",
			p.ExpiresAt.Local().Format(time.Kitchen), p.Subject, strings.Join(p.Verbs, ","), strings.Join(p.Workspaces, ","), p.TTL)
		return nil
	}
	return cmd
}
