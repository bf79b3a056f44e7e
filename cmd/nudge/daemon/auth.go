package daemon

import (
	"errors"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// authFlags binds the security flags of serve to c.
func authFlags(fs *pflag.FlagSet, c *auth.Config) {
	fs.BoolVar(&c.RequireToken, "require-token", c.RequireToken, "refuse requests without a token, even from the daemon's own uid")
	fs.StringVar(&c.PolicyFile, "policy", c.PolicyFile, "workspace policy JSON file (spawn dirs, profiles, launchers, rate limits)")
	fs.DurationVar(&c.RuntimeTokenTTL, "runtime-token-ttl", c.RuntimeTokenTTL, "lifetime of the token put in a spawned runtime's environment (renewed at half-life)")
	fs.Func("allow-uid", "also accept connections from this uid (repeatable); it must present a token", func(s string) error {
		uid, err := strconv.Atoi(s)
		if err != nil || uid < 0 {
			return errors.New("want a numeric uid")
		}
		c.AllowUIDs = append(c.AllowUIDs, uid)
		return nil
	})
}

// CheckAuth checks the configuration's tokens and policy as the daemon's Open would (the
// key file's mode, the policy's directories against the roots), opening nothing.
func (c Config) CheckAuth() error {
	_, err := openAuthority(c, nil)
	return err
}

// openAuthority opens the token authority of cfg on db (nil: a config check only).
func openAuthority(cfg Config, db *store.DB) (*auth.Authority, error) {
	ac := cfg.Auth
	ac.StateDir, ac.Roots = cfg.StateDir, cfg.Panes.Roots
	if db == nil {
		return auth.Open(ac, nil, nil)
	}
	return auth.Open(ac, struct {
		*store.Meta
		*store.AuditLog
	}{db.Meta(), db.AuditLog()}, func(event, reason string) error {
		_, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: event, Subject: "nudge", Reason: reason})
		return err
	})
}
