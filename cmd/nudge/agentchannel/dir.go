package agentchannel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Dir returns the directory where the agents of the daemon with state directory
// stateDir open their channel sockets, making it if needed: TMPDIR/nudge-UID/HASH, short
// so that a socket's path fits its ~100 bytes, one per state directory so that two
// daemons never share a socket. Each level must be a directory (not a link) of this uid
// that no other uid may enter: a directory made in advance by someone else is refused,
// not used.
func Dir(stateDir string) (string, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("nudge-%d", os.Getuid()))
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(base, hex.EncodeToString(sum[:4]))
	for _, d := range []string{base, dir} {
		if err := privateDir(d); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// privateDir makes d (0700) or checks the one there.
func privateDir(d string) error {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (a link or a file made by someone else): remove it", d)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to another user: remove it, or set TMPDIR", d)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to other users (mode %v): chmod 700 it", d, fi.Mode().Perm())
	}
	return nil
}
