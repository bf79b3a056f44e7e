// Package paths is where nudge keeps its files when no flag says otherwise: the state
// directory (the store in it), the API socket, the configuration directory and its
// profile and pack overrides. The daemon and the command line read them alike.
package paths

import (
	"os"
	"path/filepath"
)

// StateDir is $XDG_STATE_HOME/nudge, else ~/.local/state/nudge.
func StateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "nudge")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "nudge")
	}
	return filepath.Join(os.TempDir(), "nudge-state")
}

// ConfigDir is $XDG_CONFIG_HOME/nudge, else ~/.config/nudge: its profiles/ and
// packs/ subdirectories hold the user's profile and pack overrides.
func ConfigDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nudge")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "nudge")
	}
	return ""
}

// OverrideDirs are the profile and pack override directories read when no flag
// names them; "" when there is no home to find them in.
func OverrideDirs() (profiles, packs string) {
	d := ConfigDir()
	if d == "" {
		return "", ""
	}
	return filepath.Join(d, "profiles"), filepath.Join(d, "packs")
}

// Socket is $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir.
func Socket(stateDir string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "nudge", "nudge.sock")
	}
	return filepath.Join(stateDir, "nudge.sock")
}

// StoreFile is the bbolt store in the state directory dir.
func StoreFile(dir string) string { return filepath.Join(dir, "nudge.db") }
