package detector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadPacksDefaults(t *testing.T) {
	packs := defaultPacks(t)
	for _, name := range []string{"codex", "claude", "opencode", "gemini", "pi", "shell"} {
		p, ok := packs[name]
		if !ok {
			t.Errorf("no default pack %q", name)
			continue
		}
		if p.Name != name || len(p.Examples) == 0 {
			t.Errorf("pack %q: name %q, %d examples", name, p.Name, len(p.Examples))
		}
	}
	// a missing user directory means defaults only
	if _, err := LoadPacks(filepath.Join(t.TempDir(), "nope")); err != nil {
		t.Errorf("missing dir: %v", err)
	}
}

func TestLoadPacksOverride(t *testing.T) {
	dir := t.TempDir()
	shell := `{"name":"shell","prompt_region":2,"composer":{"prompt":"^λ ","cursor_line_only":true}}`
	mine := `{"composer":{"prompt":"^>> "},"busy":["crunching"]}`
	writePackFile(t, dir, "shell.json", shell)
	writePackFile(t, dir, "mine.json", mine)
	packs, err := LoadPacks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := Classify(packs["shell"], "λ make test"); c.Draft != "make test" {
		t.Errorf("override not used: draft %q", c.Draft)
	}
	if c := Classify(packs["shell"], "$ make test"); c.State == "READY" {
		t.Errorf("embedded shell cues still used: %+v", c)
	}
	if p := packs["mine"]; p == nil || p.Name != "mine" {
		t.Errorf("extra pack not loaded: %+v", p)
	}
	if packs["codex"] == nil {
		t.Error("defaults lost")
	}
	if want := filepath.Join(dir, "shell.json"); packs["shell"].Source != want || packs["codex"].Source != "" {
		t.Errorf("sources: shell %q (want %q), codex %q (want the embedded default)", packs["shell"].Source, want, packs["codex"].Source)
	}
}

func TestLoadPacksDirErrors(t *testing.T) {
	t.Run("ErrNotADirectory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "packs")
		writePackFile(t, filepath.Dir(file), "packs", "")
		if _, err := LoadPacks(file); err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ErrUnreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads any directory")
		}
		dir := filepath.Join(t.TempDir(), "packs")
		if err := os.Mkdir(dir, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		if _, err := LoadPacks(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("got %v, want an error naming %s", err, dir)
		}
	})
}

func TestLoadPacksErrors(t *testing.T) {
	tests := []struct{ name, file, content, want string }{
		{"ErrJSON", "codex.json", `{"name": "codex",`, "codex.json"},
		{"ErrRegex", "shell.json", `{"busy": ["(unclosed"]}`, "busy[0]"},
		{"ErrUnknownField", "gemini.json", `{"readdy": ["x"]}`, "readdy"},
		{"ErrState", "pi.json", `{"busy":["x"],"examples":[{"screen":"s","state":"IDLE","summary":""}]}`, "IDLE"},
		{"ErrNoCues", "empty.json", `{}`, "no cues"},
		{"ErrStyle", "x.json", `{"busy":["x"],"composer":{"placeholder_style":["grey"]}}`, "grey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writePackFile(t, dir, tt.file, tt.content)
			_, err := LoadPacks(dir)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, tt.file)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %q and %q", err, tt.file, tt.want)
			}
		})
	}
}

func writePackFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
