package main

import (
	"os"
	"path/filepath"
)

// defaultStateDir is $XDG_STATE_HOME/nudge, else ~/.local/state/nudge.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "nudge")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "nudge")
	}
	return filepath.Join(os.TempDir(), "nudge-state")
}

// defaultConfigDir is $XDG_CONFIG_HOME/nudge, else ~/.config/nudge: its profiles/ and
// packs/ subdirectories hold the user's profile and pack overrides.
func defaultConfigDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nudge")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "nudge")
	}
	return ""
}

// defaultOverrideDirs are the profile and pack override directories read when no flag
// names them; "" when there is no home to find them in.
func defaultOverrideDirs() (profiles, packs string) {
	d := defaultConfigDir()
	if d == "" {
		return "", ""
	}
	return filepath.Join(d, "profiles"), filepath.Join(d, "packs")
}

// defaultSocket is $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir.
func defaultSocket(stateDir string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "nudge", "nudge.sock")
	}
	return filepath.Join(stateDir, "nudge.sock")
}
