package doctor

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// storeSpace says how big the store file is and warns when its file system has less room
// left than the store itself: the disk fills before long, and a start that compacts the
// store (serve --compact-free) needs room for a copy.
func (d *doctor) storeSpace() {
	path := d.store
	if path == "" {
		path = filepath.Join(d.stateDir, "nudge.db")
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return // no store yet (or the permission check says what is wrong)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &fs); err != nil {
		d.say.ok("", "store %s: %.1f MB", path, mb(fi.Size()))
		return
	}
	free := int64(fs.Bavail) * int64(fs.Bsize) //nolint:unconvert // field types differ by OS
	if free < fi.Size() {
		d.say.warn("", "store %s: %.1f MB with %.1f MB left on its file system: shorten serve --retain (docs/retention.md) or free space",
			path, mb(fi.Size()), mb(free))
		return
	}
	d.say.ok("", "store %s: %.1f MB, %.1f MB left on its file system", path, mb(fi.Size()), mb(free))
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
