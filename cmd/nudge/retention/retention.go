// Package retention is the daemon's room for what its store keeps: the serve flags of
// retention, sealing and compaction (Config, Flags), the store options they make
// (Config.Options) and what the daemon logs about them: each pass, a compaction at
// start, and a store file past --store-warn-size (Watch). docs/retention.md describes
// the behaviour; the work is the store's (store.Retention, store.Options.CompactFree).
package retention

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge/store"
)

// Config is what `nudge serve` keeps. Zero durations mean "as --retain"; see Flags.
type Config struct {
	Retain      time.Duration // finished triggers last written longer ago leave the store (0: kept)
	AuditRetain time.Duration // audit records older than this are sealed into AuditArchive (0: Retain)
	Tombstones  time.Duration // how long a removed trigger's id is remembered (0: Retain)
	Every       time.Duration // hidden: time between passes (0: the store's default)
	// AuditArchive is where sealed audit segments go; Complete makes "" <state-dir>/audit.
	AuditArchive string
	CompactFree  int64 // free bytes that make a start compact the store (0: the store's default; <0 never)
	WarnSize     int64 // a store file larger than this is warned about (0: never)
}

// DefaultRetain is how long a finished trigger and an audit record stay in the store
// unless --retain says otherwise: 30 days.
const DefaultRetain = 30 * 24 * time.Hour

// DefaultConfig is the serve defaults.
func DefaultConfig() Config { return Config{Retain: DefaultRetain} }

// Flags binds c to the serve flags.
func Flags(fs *pflag.FlagSet, c *Config) {
	fs.DurationVar(&c.Retain, "retain", c.Retain, "finished triggers (receipts, attempts) last written longer ago than this are removed from the store; a repeat of their trigger_id is refused while a tombstone is kept (as long again); 0 keeps every trigger (and the audit log, unless --audit-retain)")
	fs.DurationVar(&c.AuditRetain, "audit-retain", c.AuditRetain, "audit records older than this are moved from the store into hash-chained segment files under --audit-archive (default: --retain)")
	fs.DurationVar(&c.Tombstones, "retain-tombstones", c.Tombstones, "how long the id of a removed trigger is remembered: its receipt says when it aged out and a repeat is refused (default: --retain)")
	fs.DurationVar(&c.Every, "retain-every", c.Every, "time between retention passes (default 10m)")
	fs.MarkHidden("retain-every") //nolint:errcheck // defined just above
	fs.StringVar(&c.AuditArchive, "audit-archive", c.AuditArchive, "directory of the sealed audit segments (default <state-dir>/audit; keep or delete them as you wish)")
	fs.Int64Var(&c.WarnSize, "store-warn-size", c.WarnSize, "warn in the log when the store file grows past this many bytes, once when it crosses and again each time it grows a quarter further (checked at start and every 10m; 0: never); nudge doctor compares too, /metrics has nudge_store_file_bytes and nudge_store_warn_bytes")
	fs.Int64Var(&c.CompactFree, "compact-free", c.CompactFree, "a start compacts the store file when its free space reaches this many bytes and half the file (default 32 MiB; negative: never)")
}

// Complete fills the archive's default under stateDir and checks c.
func (c *Config) Complete(stateDir string) error {
	if c.AuditArchive == "" {
		c.AuditArchive = filepath.Join(stateDir, "audit")
	}
	if c.Retain < 0 || c.AuditRetain < 0 || c.Tombstones < 0 {
		return errors.New("--retain, --audit-retain and --retain-tombstones must not be negative")
	}
	return nil
}

// Options sets o's retention and compaction for the store at path, and returns the
// Watch whose Pass logs each pass to log and warns when the file is past WarnSize (the
// daemon subscribes it to the store's store.RetainStats). Every pass runs, also one with
// nothing to remove (--retain 0), so the size is checked every --retain-every.
func (c Config) Options(o *store.Options, path string, log hclog.Logger) *Watch {
	w := newWatch(path, c.WarnSize, log)
	o.CompactFree = c.CompactFree
	o.Retain = store.Retention{Window: c.Retain, AuditWindow: c.AuditRetain, AuditDir: c.AuditArchive,
		Tombstones: c.Tombstones, Every: c.Every, Watched: true}
	return w
}

// FileSize is path's size, 0 if it cannot be read.
func FileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// logPass logs what a retention pass removed (at debug level when it removed nothing).
func logPass(log hclog.Logger, st store.RetainStats) {
	if st.Err != nil {
		log.Error("store retention pass stopped", "err", st.Err, "triggers_removed", st.Triggers, "audit_sealed", st.AuditSealed)
		return
	}
	if st.Triggers+st.Tombstones+st.AuditSealed > 0 {
		log.Info("store retention", "triggers_removed", st.Triggers, "attempts_removed", st.Attempts,
			"tombstones_removed", st.Tombstones, "audit_sealed", st.AuditSealed, "audit_sealed_through", st.AuditThrough)
		return
	}
	log.Debug("store retention pass: nothing due")
}
