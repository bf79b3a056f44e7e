package doctor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/panes"
)

// Overrides describes a profile or pack override directory after a load: the files
// that replaced or added a profile (pack), or why none was read.
type Overrides struct {
	Kind  string   // "profile" or "pack"
	Dir   string   // "" = none configured
	Files []string // base names of the files read, sorted
	Found bool     // the directory exists
}

// ProfileOverrides describes the profile override directory dir after ps were loaded.
func ProfileOverrides(dir string, ps map[string]panes.Profile) Overrides {
	o := Overrides{Kind: "profile", Dir: dir, Found: dirExists(dir)}
	for _, p := range ps {
		if p.Source != "" {
			o.Files = append(o.Files, filepath.Base(p.Source))
		}
	}
	slices.Sort(o.Files)
	return o
}

// PackOverrides describes the pack override directory dir after ps were loaded.
func PackOverrides(dir string, ps map[string]*detector.Pack) Overrides {
	o := Overrides{Kind: "pack", Dir: dir, Found: dirExists(dir)}
	for _, p := range ps {
		if p.Source != "" {
			o.Files = append(o.Files, filepath.Base(p.Source))
		}
	}
	slices.Sort(o.Files)
	return o
}

func dirExists(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(dir)
	return !errors.Is(err, fs.ErrNotExist)
}

// String says, for the log and doctor, which directory was read and what it held.
func (o Overrides) String() string {
	switch {
	case o.Dir == "":
		return "no " + o.Kind + " override directory: built-in " + o.Kind + "s only"
	case !o.Found:
		return o.Dir + " does not exist: built-in " + o.Kind + "s only"
	case len(o.Files) == 0:
		return o.Dir + " read: no *.json files, built-in " + o.Kind + "s only"
	}
	s := o.Dir + " read: "
	for i, f := range o.Files {
		if i > 0 {
			s += ", "
		}
		s += f
	}
	return s
}

// Log writes o on serve's log.
func (o Overrides) Log(l hclog.Logger) {
	l.Info(o.Kind+" overrides", "dir", o.Dir, "exists", o.Found, "files", o.Files)
}

// MissingPacks lists, sorted, the profiles whose readiness pack does not exist: their
// screens are never classified (and one that waits for READY never starts).
func MissingPacks(profiles map[string]panes.Profile, packs map[string]*detector.Pack) []string {
	var out []string
	for name, p := range profiles {
		if packs[p.Pack] == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
