package cli

import (
	"bufio"
	"bytes"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Package main only wires: it stays within mainLines lines. The command line is this
// package, the daemon package daemon.
const mainLines = 100

func TestPackageMainSize(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	if n == 0 || n > mainLines {
		t.Errorf("package main (cmd/nudge) has %d lines, want 1 to %d: it only wires (the command line is package cli, the daemon package daemon)", n, mainLines)
	}
}

// A type keeps a method set a reader can hold in mind: at most maxMethods exported
// methods, counting those promoted from embedded fields. A type that grows past it hands
// out its parts (store.DB.Triggers) instead of embedding them, and its consumers declare
// the small interface they use.
const maxMethods = 40

func TestMethodSetSize(t *testing.T) {
	for _, c := range methodCounts(t) {
		if c.n > maxMethods {
			t.Errorf("%s has %d exported methods (with promoted ones), more than %d: hand out its parts instead of embedding them", c.name, c.n, maxMethods)
		}
	}
}

type methodCount struct {
	name string
	n    int
}

// methodCounts counts the exported methods of every exported type (of *T for a
// concrete T) of the module's non-test packages, promoted ones included, from the
// compiler's export data (go list -export).
func methodCounts(t *testing.T) []methodCount {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}\t{{with .Module}}{{.Path}}{{end}}", "./...")
	cmd.Dir = "../../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/nudgehq/nudge"
	exports := map[string]string{}
	var ours []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			continue
		}
		exports[f[0]] = f[1]
		if f[2] == module && f[1] != "" { // a package of tests only has no export data
			ours = append(ours, f[0])
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	var counts []methodCount
	for _, path := range ours {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, name := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() || tn.IsAlias() {
				continue
			}
			typ := tn.Type()
			if !types.IsInterface(typ) {
				typ = types.NewPointer(typ)
			}
			ms := types.NewMethodSet(typ)
			n := 0
			for i := range ms.Len() {
				if ms.At(i).Obj().Exported() {
					n++
				}
			}
			counts = append(counts, methodCount{path + "." + name, n})
		}
	}
	return counts
}
