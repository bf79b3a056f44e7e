package web

import (
	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge/cmd/nudge/flagvals"
)

// Flags binds the serve flags of the web view to c.
func Flags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.Addr, "web", "", "serve the web view on this address (off by default; e.g. 127.0.0.1:8088; another than loopback needs --web-tls-cert/--web-tls-key or --web-insecure)")
	fs.StringVar(&c.TLSCert, "web-tls-cert", "", "serve the web view over HTTPS with this certificate (PEM)")
	fs.StringVar(&c.TLSKey, "web-tls-key", "", "the key of --web-tls-cert (PEM)")
	fs.BoolVar(&c.Insecure, "web-insecure", false, "allow plain HTTP for the web view on an address that is not loopback (a network you trust)")
	fs.Var(flagvals.List{V: &c.Origins}, "web-origin", "also accept the web view's pages from this origin, e.g. a TLS proxy in front (https://box.tailnet.ts.net); repeatable")
	fs.StringVar(&c.PushSubject, "web-push-contact", "", "the contact (mailto: or https:) Web Push services may reach you at (default mailto:nudge@localhost)")
	fs.StringVar(&c.PublicURL, "web-url", "", "base of the links nudge web pair prints (default: the first --web-origin, else the --web address)")
}
