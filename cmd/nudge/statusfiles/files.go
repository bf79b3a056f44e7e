package statusfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Dir is the status directory under a daemon's state directory: <state-dir>/workers.
func Dir(stateDir string) string { return filepath.Join(stateDir, DirName) }

// DirName is the status directory's name in the state directory.
const DirName = "workers"

// FileName is the name of every status file: <dir>/status.json for the fleet and
// <dir>/<runtime id>/status.json for each runtime (seed 002's .workers/<id>/status.json).
const FileName = "status.json"

// MaxFileSize bounds a status file read back (a runtime's, with its history; the
// fleet's). A larger one is refused, not read.
const MaxFileSize = 4 << 20

// ErrNotRegular is returned for a status path that is not a regular file (a symlink, a
// fifo, a directory): it is never read or written through.
var ErrNotRegular = errors.New("statusfiles: not a regular file")

// nameRE is a runtime id that is a safe directory name: runtime ids are rt_<ws>.<role>
// (panes.RuntimeID); anything else is never given a directory.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$`)

// validName reports whether id may name a directory of dir.
func validName(id string) bool { return nameRE.MatchString(id) && id != DirName }

// openDir opens dir (which must be a directory, not a symlink) for the *at calls, creating
// it 0700 if it does not exist (parent's fd; -1 with an absolute path).
func openDir(parent int, name string, create bool) (int, error) {
	if parent < 0 {
		parent = unix.AT_FDCWD
	}
	if create {
		if err := unix.Mkdirat(parent, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("create %s: %w", name, err)
		}
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != uint32(os.Getuid()) {
		unix.Close(fd)
		return -1, fmt.Errorf("open %s: not owned by this user", name)
	}
	if st.Mode&0o077 != 0 {
		_ = unix.Fchmod(fd, 0o700) // a directory another uid could list or write into
	}
	return fd, nil
}

var tmpSeq atomic.Uint64

// writeAt replaces dirfd's status.json with b: written to a new temporary file in the
// same directory (O_EXCL|O_NOFOLLOW, 0600), synced, renamed over the old one, and the
// directory synced. A failure at any step (a full disk) removes the temporary file and
// leaves the last good file as it was. Nothing is followed: a symlink named status.json
// is replaced, not written through, and a temporary name already taken fails the write.
func writeAt(dirfd int, b []byte) (err error) {
	tmp := ".status." + strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(tmpSeq.Add(1), 10) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	if err = unix.Renameat(dirfd, tmp, dirfd, FileName); err != nil {
		return fmt.Errorf("rename %s: %w", FileName, err)
	}
	_ = unix.Fsync(dirfd) // the rename is durable; a failure here leaves a good file
	return nil
}

// readAt reads dirfd's status.json: a regular file (never through a symlink) of at most
// MaxFileSize bytes.
func readAt(dirfd int) ([]byte, error) {
	fd, err := unix.Openat(dirfd, FileName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, ErrNotRegular
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: FileName, Err: err}
	}
	f := os.NewFile(uintptr(fd), FileName)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("read %s: %d bytes, more than %d", FileName, fi.Size(), MaxFileSize)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxFileSize {
		return nil, fmt.Errorf("read %s: more than %d bytes", FileName, MaxFileSize)
	}
	return buf.Bytes(), nil
}

// readFile reads the status file of dir/sub ("" for the fleet's) the way readAt does,
// without following a symlink at the status directory or the runtime's.
func readFile(stateDir, sub string) ([]byte, error) {
	sfd, err := unix.Open(stateDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: stateDir, Err: err}
	}
	defer unix.Close(sfd)
	dfd, err := unix.Openat(sfd, DirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: Dir(stateDir), Err: err}
	}
	defer unix.Close(dfd)
	if sub == "" {
		return readAt(dfd)
	}
	if !validName(sub) {
		return nil, fmt.Errorf("read status: invalid runtime id %q", sub)
	}
	rfd, err := unix.Openat(dfd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(Dir(stateDir), sub), Err: err}
	}
	defer unix.Close(rfd)
	return readAt(rfd)
}

// writeFile is writeAt; tests replace it to make writes fail.
var writeFile = writeAt

func syscallClose(fd int) { _ = unix.Close(fd) }
