package record

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// ended waits for the reader to end on its own and returns the events it gave before.
func ended(t *testing.T, r Reader) []Event {
	t.Helper()
	var evs []Event
	deadline := time.After(30 * time.Second) // a hang, not a speed: generous under -race
	for {
		select {
		case e, ok := <-r.Events():
			if !ok {
				return evs
			}
			evs = append(evs, e)
		case <-deadline:
			t.Fatalf("the reader did not end (path %q); events %+v", r.Path(), evs)
		}
	}
}

// replaceRecord puts what make creates under the record's name, as a CLI writing a file
// anew and renaming it into place would.
func replaceRecord(t *testing.T, path string, make func(tmp string) error) {
	t.Helper()
	tmp := path + ".new"
	if err := make(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const userOne = `{"type":"user","sessionId":"s1","message":{"role":"user","content":"one"}}` + "\n"

// TestFollowReplacedNotFollowed: a record found and read, then replaced under its name by
// a symlink out of the CLI's directory, a FIFO, or a symlink to /dev/zero, is not read:
// the reader ends (ErrNotRegular) without a line of the file outside, without blocking on
// the FIFO, without reading the device; Close returns.
func TestFollowReplacedNotFollowed(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(outside, []byte(`{"type":"user","sessionId":"s1","message":{"role":"user","content":"SECRET"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(tmp string) error
	}{
		{"SymlinkOut", func(tmp string) error { return os.Symlink(outside, tmp) }},
		{"FIFO", func(tmp string) error { return syscall.Mkfifo(tmp, 0o600) }},
		{"DevZero", func(tmp string) error { return os.Symlink("/dev/zero", tmp) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, path := claudeSpec(t)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(userOne), 0o600); err != nil {
				t.Fatal(err)
			}
			r := Open(Claude{}, s, Options{})
			defer r.Close()
			if evs := kinds(t, r, 3); evs[1].Text != "one" {
				t.Fatalf("events %+v", evs)
			}
			replaceRecord(t, path, tc.make)
			for _, e := range ended(t, r) {
				if e.Text == "SECRET" {
					t.Fatal("read the file outside the CLI's directory")
				}
			}
			if !errors.Is(r.Err(), ErrNotRegular) {
				t.Fatalf("err %v, want ErrNotRegular", r.Err())
			}
			r.Close()
		})
	}
}

// TestFollowFIFOAtStart: a record that is a FIFO when found (its name matched) does not
// block the reader: it ends with ErrNotRegular, and Close returns.
func TestFollowFIFOAtStart(t *testing.T) {
	s, path := claudeSpec(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r := Open(Claude{}, s, Options{})
	defer r.Close()
	ended(t, r)
	if !errors.Is(r.Err(), ErrNotRegular) {
		t.Fatalf("err %v, want ErrNotRegular", r.Err())
	}
}

// TestLocateSettingsNotBlocking: the files a record is found by (Gemini's projects.json,
// Pi's settings.json) as a FIFO or /dev/zero block nothing and are not read.
func TestLocateSettingsNotBlocking(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"DevZero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			s := Spec{Home: home, Dir: "/home/user/work"}
			for _, p := range []string{filepath.Join(Gemini{}.Root(s), "projects.json"), filepath.Join(piAgentDir(s), "settings.json")} {
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := tc.make(p); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Gemini{}.Locate(s)
				Pi{}.Locate(s)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Locate blocked on a settings file")
			}
		})
	}
}

// TestPinDirRefusesSymlinkedDir: the directory a record is found in, swapped for a
// symlink out of the CLI's directory before the record is opened, is not entered.
func TestPinDirRefusesSymlinkedDir(t *testing.T) {
	root := t.TempDir()
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "r.jsonl"), []byte(userOne), 0o600)
	if err := os.Symlink(out, filepath.Join(root, "projects")); err != nil {
		t.Fatal(err)
	}
	if _, err := pinDir(root, filepath.Join(root, "projects", "r.jsonl")); !errors.Is(err, ErrOutside) {
		t.Fatalf("err %v, want ErrOutside", err)
	}
}

// TestOpenCodeHugeRowNotLoaded: an OpenCode event row three times MaxLine long is not
// loaded (its size is asked first): reading it costs the process nothing near its size,
// it is given without text, and the rows after it are read.
func TestOpenCodeHugeRowNotLoaded(t *testing.T) {
	home := t.TempDir()
	db, path := ocDB(t, home)
	if _, err := db.Exec("INSERT INTO session (id, directory, time_created) VALUES ('ses_a', '/w', 1)"); err != nil {
		t.Fatal(err)
	}
	ocEvent(t, db, "ses_a", 0, "session.created.1", `{"sessionID":"ses_a"}`)
	if _, err := db.Exec(`INSERT INTO event VALUES ('big', 'ses_a', 1, 'message.part.updated.1', replace(hex(zeroblob(?)), '00', 'xx'))`, 3*MaxLine/2); err != nil {
		t.Fatal(err)
	}
	ocEvent(t, db, "ses_a", 2, "message.updated.1", `{"sessionID":"ses_a","info":{"id":"u1","role":"user"}}`)
	tr, err := OpenCode{}.OpenTable(Spec{Home: home}, path, "ses_a")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var before, after runtimeMem
	before.read()
	var sizes []int
	var nils int
	err = tr.Rows(0, func(n int64, key string, text []byte) error {
		sizes = append(sizes, len(text))
		if text == nil {
			nils++
		}
		return nil
	})
	after.read()
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || nils != 1 || sizes[1] != 0 || sizes[2] == 0 {
		t.Fatalf("rows of %v bytes, %d without text", sizes, nils)
	}
	if grew := after.total - before.total; grew > MaxLine {
		t.Fatalf("reading the rows allocated %d MiB", grew>>20)
	}
}

// TestOpenCodeDatabaseFIFO: an OpenCode database (or its write-ahead log) that is a FIFO
// is not opened: SQLite would block in open.
func TestOpenCodeDatabaseFIFO(t *testing.T) {
	for _, name := range []string{"opencode.db", "opencode.db-wal"} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			s := Spec{Home: home, Dir: "/w", SessionID: "ses_a"}
			dir := OpenCode{}.Root(s)
			os.MkdirAll(dir, 0o700)
			if name != "opencode.db" {
				os.WriteFile(filepath.Join(dir, "opencode.db"), nil, 0o600)
			}
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := OpenCode{}.Locate(s)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotYet) {
					t.Fatalf("err %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Locate blocked on a FIFO")
			}
		})
	}
}

// runtimeMem is the Go heap's running total of bytes allocated.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
