package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// Verbs a caller may be allowed.
const (
	verbRead      = auth.VerbRead
	verbTrigger   = auth.VerbTrigger
	verbAck       = auth.VerbAck
	verbHeartbeat = auth.VerbHeartbeat
	verbSpawn     = auth.VerbSpawn
	verbAdmin     = auth.VerbAdmin
)

// caller is an authenticated API client (auth.Caller).
type caller = auth.Caller

// authConfig is the security part of serveConfig (embedded there).
type authConfig struct {
	RequireToken    bool          // refuse tokenless requests even from the daemon's uid
	PolicyFile      string        // workspace policy (auth.Policy); "" means none
	RuntimeTokenTTL time.Duration // lifetime of a runtime token; renewed at half-life
}

func authFlags(fs *pflag.FlagSet, c *serveConfig) {
	fs.BoolVar(&c.RequireToken, "require-token", false, "refuse requests without a token, even from the daemon's own uid")
	fs.StringVar(&c.PolicyFile, "policy", "", "workspace policy JSON file (spawn dirs, profiles, launchers, rate limits)")
	fs.DurationVar(&c.RuntimeTokenTTL, "runtime-token-ttl", auth.DefaultConfig().RuntimeTokenTTL, "lifetime of the token put in a spawned runtime's environment (renewed at half-life)")
	fs.Func("allow-uid", "also accept connections from this uid (repeatable); it must present a token", func(s string) error {
		uid, err := strconv.Atoi(s)
		if err != nil || uid < 0 {
			return errors.New("want a numeric uid")
		}
		c.AllowUIDs = append(c.AllowUIDs, uid)
		return nil
	})
}

// authorityConfig is the auth.Config of cfg.
func authorityConfig(cfg serveConfig) auth.Config {
	return auth.Config{StateDir: cfg.StateDir, RequireToken: cfg.RequireToken, SharedToken: cfg.Token,
		AllowUIDs: cfg.AllowUIDs, PolicyFile: cfg.PolicyFile, Roots: cfg.Roots, RuntimeTokenTTL: cfg.RuntimeTokenTTL}
}

// openAuthority opens the token authority of cfg on db (nil: a config check only).
func openAuthority(cfg serveConfig, db *store.DB) (*auth.Authority, error) {
	var audit func(event, reason string) error
	if db != nil {
		audit = func(event, reason string) error {
			_, err := db.AppendAudit(nudge.AuditRecord{Event: event, Subject: "nudge", Reason: reason})
			return err
		}
	}
	ac := authorityConfig(cfg)
	if db == nil {
		return auth.Open(ac, nil, nil)
	}
	return auth.Open(ac, db, audit)
}

// revokeRuntime invalidates a runtime's tokens (deregistration): its epoch is deleted, so
// every token minted for it fails on the next request.
func (d *daemon) revokeRuntime(id string) {
	if d.auth != nil {
		d.auth.RevokeRuntime(context.Background(), id)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
