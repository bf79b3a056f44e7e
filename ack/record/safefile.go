package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The record and the files that say where it is are the agent's to replace at any time:
// a symlink out of the CLI's directory, a FIFO (an open that blocks until someone
// writes), a device (/dev/zero never ends). So every file here is opened without
// blocking and without following a last symlink, and read only if it is a regular file;
// a record is reopened (replaced under its name) in the directory it was found in,
// pinned by a descriptor.

// ErrNotRegular: the record (or a file it is found by) is not a regular file: a FIFO,
// a device, a directory, or a symlink where the record was.
var ErrNotRegular = errors.New("record: not a regular file")

// recordDir is the directory a record was found in, held open: the record is opened
// (again) by its name in it, never by a path that could lead elsewhere since.
type recordDir struct {
	fd   int
	name string // the record's name in it
	path string // the record's path, for the os.File
}

// pinDir opens the directory of path (symlinks resolved, within the CLI's directory
// root: inside) and returns it for opening the record. It is walked down to from root one
// name at a time, following no symlink: a directory swapped for a link since path was
// resolved is not entered.
func pinDir(root, path string) (*recordDir, error) {
	rr, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, ErrOutside
	}
	rel, err := filepath.Rel(rr, filepath.Dir(path))
	if err != nil || !within(rr, filepath.Dir(path)) {
		return nil, ErrOutside
	}
	fd, err := unix.Open(rr, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open record directory: %w", err)
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if name == "." || name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrOutside, filepath.Dir(path), err)
		}
		fd = next
	}
	return &recordDir{fd: fd, name: filepath.Base(path), path: path}, nil
}

// open opens the record in its directory: never through a symlink, never blocking, and
// only a regular file (ErrNotRegular otherwise). os.ErrNotExist while it is not there.
func (d *recordDir) open() (*os.File, error) {
	fd, err := unix.Openat(d.fd, d.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, os.ErrNotExist
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EMLINK):
		return nil, fmt.Errorf("%w: %s is a symlink", ErrNotRegular, d.path)
	case err != nil:
		return nil, err
	}
	return regularFile(fd, d.path)
}

// same reports whether f is still the file under the record's name in its directory.
func (d *recordDir) same(f *os.File) bool {
	var now unix.Stat_t
	if unix.Fstatat(d.fd, d.name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	return ok && st.Dev == now.Dev && st.Ino == now.Ino
}

func (d *recordDir) close() { unix.Close(d.fd) }

// regularFile wraps fd as a file if it is a regular one, and closes it otherwise.
func regularFile(fd int, path string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openRegular opens path for reading without blocking (a FIFO) and returns it only if it
// is a regular file. A symlink is followed: the files read this way (a CLI's settings)
// are the user's, who may keep them elsewhere; what they give is checked where it is used.
func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return regularFile(fd, path)
}

// readSmall reads the regular file path if it holds at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}

// checkDatabase checks that a SQLite database and its companions (its write-ahead log,
// shared memory and journal), where they exist, are regular files and not symlinks:
// SQLite opens them by name, blocking on a FIFO and reading a device to no end. They are
// looked at, not opened: closing a descriptor of a file drops every POSIX lock the
// process holds on it, SQLite's own among them.
func checkDatabase(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist) && p != path:
			continue
		case err != nil:
			return err
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%w: %s is %v", ErrNotRegular, p, fi.Mode().Type())
		}
	}
	return nil
}
