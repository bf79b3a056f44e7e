package cli

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportArrows holds the arrows the root package's doc.go draws, read from the
// packages' own imports (go list): the library rooms import nothing of cmd/; the store
// imports none of the rooms it serves; the dashboard (`nudge watch`) and the view model it
// shares with the web view speak only the client (the root package, cmd/nudge/api), so a
// dashboard never reaches into the daemon; and the test rigs (the model stand-ins, the
// stream recorder, the benchmarks' pane reader) are imported by tests and benchmarks only,
// never by what ships in the binary. Package main imports only the command line (cli), and
// of the command line only `serve` (cmd_serve.go) imports the daemon.
func TestImportArrows(t *testing.T) {
	const mod = "github.com/nudgehq/nudge"
	pkgs := listPackages(t, "../../../...")
	byPath := map[string]goPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	ours := func(deps []string) []string {
		var out []string
		for _, d := range deps {
			if d == mod || strings.HasPrefix(d, mod+"/") {
				out = append(out, strings.TrimPrefix(strings.TrimPrefix(d, mod), "/"))
			}
		}
		return out
	}
	rig := func(p string) bool {
		return slices.Contains([]string{"cmd/nudge/standin", "cmd/nudge/streamrec"}, p) ||
			strings.HasPrefix(p, "benchmarks/internal/")
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
		imports := ours(p.Imports)
		switch {
		case slices.Contains([]string{"controlmode", "panes", "detector", "inject", "ack", "store"}, firstDir(rel)):
			for _, i := range imports {
				if strings.HasPrefix(i, "cmd/") {
					t.Errorf("%s imports %s: a library room imports nothing of cmd/", rel, i)
				}
			}
		}
		if firstDir(rel) == "store" {
			for _, i := range imports {
				if slices.Contains([]string{"controlmode", "panes", "detector", "inject", "ack"}, firstDir(i)) {
					t.Errorf("%s imports %s: the store imports none of the rooms it serves", rel, i)
				}
			}
		}
		if rel == "cmd/nudge/tui" || rel == "cmd/nudge/view" {
			for _, d := range ours(p.Deps) {
				if !slices.Contains([]string{"", "cmd/nudge/api", "cmd/nudge/view"}, d) {
					t.Errorf("%s depends on %s: the dashboard and its view model speak only the client (the root package, cmd/nudge/api)", rel, d)
				}
			}
		}
		if rel != "cmd/nudge/cli" && slices.Contains(imports, "cmd/nudge/daemon") {
			t.Errorf("%s imports cmd/nudge/daemon: only the command line's serve does", rel)
		}
		if rel == "cmd/nudge" && !slices.Equal(imports, []string{"cmd/nudge/cli"}) {
			t.Errorf("package main imports %v: it imports the command line (cmd/nudge/cli) only", imports)
		}
		if !rig(rel) && firstDir(rel) != "benchmarks" {
			for _, i := range imports {
				if rig(i) {
					t.Errorf("%s imports the test rig %s outside its tests: rigs are for tests and benchmarks", rel, i)
				}
			}
		}
	}
	if files := filesImporting(t, ".", mod+"/cmd/nudge/daemon"); !slices.Equal(files, []string{"cmd_serve.go"}) {
		t.Errorf("the command line's files that import the daemon: %v, want cmd_serve.go only", files)
	}
	for _, want := range []string{"cmd/nudge", "cmd/nudge/daemon", "cmd/nudge/tui", "cmd/nudge/view", "store", "cmd/nudge/standin"} {
		if _, ok := byPath[mod+"/"+want]; !ok {
			t.Errorf("go list did not list %s", want)
		}
	}
}

// filesImporting lists the non-test Go files of dir that import path.
func filesImporting(t *testing.T, dir, path string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(af.Imports, func(s *ast.ImportSpec) bool { return strings.Trim(s.Path.Value, `"`) == path }) {
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

// goPackage is what TestImportArrows reads of `go list -json`.
type goPackage struct {
	ImportPath string
	Imports    []string // the non-test imports
	Deps       []string // every package it depends on, transitively, tests not counted
}

func listPackages(t *testing.T, pattern string) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", pattern).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// firstDir is a package path's first element ("inject" of "inject/native").
func firstDir(rel string) string {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return first
}
