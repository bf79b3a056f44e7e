package panes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nudgehq/nudge"
)

// resolveDir checks a spawn directory against Config.Roots: it must be absolute, hold
// no ".." element, exist as a directory and, with symlinks resolved, lie under a root.
// It returns the resolved path. "" means the first root, or none if there are no roots.
func (l *launcher) resolveDir(dir string) (string, error) {
	if dir == "" {
		if len(l.cfg.Roots) > 0 {
			return l.cfg.Roots[0], nil
		}
		return "", nil
	}
	if !filepath.IsAbs(dir) || slices.Contains(strings.Split(dir, string(filepath.Separator)), "..") {
		return "", badRequest("directory %q must be absolute and hold no '..'", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", badRequest("directory %q: %v", dir, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", badRequest("directory %q is not a directory", dir)
	}
	for _, root := range l.cfg.Roots {
		if within(root, real) {
			return real, nil
		}
	}
	return "", nudge.NewError(nudge.Forbidden, "directory "+dir+" (resolved "+real+") is outside the allowed workspace roots ("+
		strings.Join(l.cfg.Roots, ", ")+"): spawn under one of them, or start the daemon with `nudge serve --root "+real+"` (repeatable) to allow it")
}

// within reports whether path is root or below it (both cleaned and resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolvePromptFile checks a spawn's --prompt-file against Config.Roots as resolveDir does
// a directory: absolute, no "..", a regular file that, with symlinks resolved, lies under
// a root. The daemon reads it with its own rights for a caller that may have fewer, so a
// file outside the workspaces (a key, a config holding a token) is never read.
func (l *launcher) resolvePromptFile(path string) (string, error) {
	if !filepath.IsAbs(path) || slices.Contains(strings.Split(path, string(filepath.Separator)), "..") {
		return "", badRequest("prompt file %q must be absolute and hold no '..'", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", badRequest("prompt file %q: %v", path, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return "", badRequest("prompt file %q is not a regular file", path)
	}
	for _, root := range l.cfg.Roots {
		if within(root, real) {
			return real, nil
		}
	}
	return "", nudge.NewError(nudge.Forbidden, "prompt file "+path+" (resolved "+real+") is outside the allowed workspace roots ("+
		strings.Join(l.cfg.Roots, ", ")+"): put it under one of them, pass the prompt itself, or start the daemon with `nudge serve --root DIR` to allow DIR")
}
