package doctor

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nudgehq/nudge/cmd/nudge/retention"
)

// storeSpace says how big the store file is; warns when it is past the daemon's
// --store-warn-size (with what to do, as the daemon's log says it), and when its file
// system has less room left than the store itself: the disk fills before long, and a
// start that compacts the store (serve --compact-free) needs room for a copy.
func (d *doctor) storeSpace() {
	path := d.store
	if path == "" {
		path = filepath.Join(d.stateDir, "nudge.db")
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return // no store yet (or the permission check says what is wrong)
	}
	size := bytesText(fi.Size())
	switch {
	case d.storeWarn > 0 && fi.Size() > d.storeWarn:
		d.say.warn("", "store %s: %s, past serve --store-warn-size %d (%s): %s",
			path, size, d.storeWarn, bytesText(d.storeWarn), retention.Fix)
	case d.storeWarn > 0:
		size += fmt.Sprintf(" of serve --store-warn-size %s", bytesText(d.storeWarn))
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &fs); err != nil {
		d.say.ok("", "store %s: %s", path, size)
		return
	}
	free := int64(fs.Bavail) * int64(fs.Bsize) //nolint:unconvert // field types differ by OS
	if free < fi.Size() {
		d.say.warn("", "store %s: %s with %s left on its file system: shorten serve --retain (docs/retention.md) or free space",
			path, size, bytesText(free))
		return
	}
	d.say.ok("", "store %s: %s, %s left on its file system", path, size, bytesText(free))
}

// bytesText is n bytes in MB, or in KB or bytes when it is smaller than a MB.
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
