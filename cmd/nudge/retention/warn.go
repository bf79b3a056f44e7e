package retention

import (
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge/store"
)

// Fix is what to do about a store file past --store-warn-size; the daemon's log and
// `nudge doctor` both say it.
const Fix = "shorten serve --retain (and --audit-retain) so its passes free pages, then restart nudge serve: " +
	"a start compacts the file when its free pages reach --compact-free (default 32 MiB) and half the file " +
	"(docs/retention.md); or raise --store-warn-size if this size is expected"

// regrow: a file past the bound is warned about again once it has grown by
// 1/regrow (a quarter) of the size it had when last warned about.
const regrow = 4

// Watch warns in the log when the store file is past Bound (--store-warn-size): once
// when it crosses the bound, again each time it has grown by another quarter since the
// last warning (not at every check), and, with an info line, once when it is back
// under, after which a new crossing warns again. Config.Options makes it; the store's
// retention loop calls Check after every pass and the daemon calls Opened at start.
// Its methods are safe for concurrent use.
type Watch struct {
	Bound int64 // 0: never warn
	path  string
	log   hclog.Logger
	size  func(path string) int64 // FileSize; tests set their own

	mu     sync.Mutex
	warned int64 // the size last warned about; 0 while under the bound
}

// newWatch returns a Watch of the file at path against bound (0: never warn) that logs
// to log.
func newWatch(path string, bound int64, log hclog.Logger) *Watch {
	return &Watch{Bound: bound, path: path, log: log}
}

// Opened logs what Open did to the file (a compaction: its size went from before down)
// and checks its size.
func (w *Watch) Opened(before int64) {
	if after := w.fileSize(); after < before {
		w.log.Info("store compacted at start", "path", w.path, "bytes_before", before, "bytes_after", after)
	}
	w.Check()
}

// Pass takes what a retention pass did (store.RetainStats, on the store's bus): it is
// logged, and the file's size checked.
func (w *Watch) Pass(st store.RetainStats) {
	logPass(w.log, st)
	w.Check()
}

// Check reads the file's size and logs what changed against the bound: crossed it,
// grew a quarter further past it, or came back under.
func (w *Watch) Check() {
	if w.Bound <= 0 {
		return
	}
	size := w.fileSize()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case size > w.Bound && w.warned == 0:
		w.warned = size
		w.log.Warn("store file is past --store-warn-size: "+Fix, "path", w.path, "bytes", size, "bound", w.Bound)
	case size > w.Bound && size >= w.warned+w.warned/regrow:
		w.log.Warn(fmt.Sprintf("store file is still growing past --store-warn-size (%d bytes when last warned): %s", w.warned, Fix),
			"path", w.path, "bytes", size, "bound", w.Bound)
		w.warned = size
	case size <= w.Bound && w.warned != 0:
		w.warned = 0
		w.log.Info("store file is back under --store-warn-size", "path", w.path, "bytes", size, "bound", w.Bound)
	}
}

func (w *Watch) fileSize() int64 {
	if w.size != nil {
		return w.size(w.path)
	}
	return FileSize(w.path)
}
