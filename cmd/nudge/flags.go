package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// errHelp means --help was printed; the command exits 0.
var errHelp = errors.New("help requested")

// newFlagSet returns a flag set that prints its usage to env.stderr (stdout for --help).
func newFlagSet(name, argsUsage string, env *cliEnv) *flag.FlagSet {
	fs := flag.NewFlagSet("nudge "+name, flag.ContinueOnError)
	fs.SetOutput(env.stdout)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: nudge %s [flags] %s\n", name, argsUsage)
		if c, ok := commands()[name]; ok {
			fmt.Fprintf(out, "\n%s.\n", strings.ToUpper(c.summary[:1])+c.summary[1:])
		}
		fmt.Fprintf(out, "\nFlags (each also read from NUDGE_<FLAG> in the environment):\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; flags not given on the command line are taken from the
// environment as NUDGE_<NAME> (dashes become underscores).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseInterleaved(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return &usageError{err.Error()}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		key := "NUDGE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("%s=%q: %v", key, v, e)
			}
		}
	})
	return err
}

// parseInterleaved parses flags that come before or after the arguments (`nudge restart
// ID --reason x`); "--" ends the flags, and everything after it is an argument.
func parseInterleaved(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

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
