package fuzz

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/statusfiles"
)

// FuzzStatusFile reads a runtime's and the fleet's status file that an agent of the same
// uid may have written: any bytes. Properties: no panic; a file that reads is of a known
// schema, names the runtime it was read for or is refused by the daemon's load (its
// Record is then a runtime of that id), and its Record never carries a prompt.
func FuzzStatusFile(f *testing.F) {
	corpus := []string{
		`{"schema":1,"id":"rt_ws.a","status":"ready","state":"READY","history":[{"ts":1,"status":"ready","state":"READY"}]}`,
		`{"schema":2,"id":"rt_ws.a"}`,                                   // a newer schema: refused
		`{"schema":1,"runtimes":[{"schema":1,"id":"rt_ws.b"}]}`,         // a fleet
		`{"schema":1,"id":"rt_ws.a","last_trigger":{"trigger_id":"t"}}`, // a trigger
		`{"schema":1,"id":"rt_ws.a","history":[` + `{"ts":1},` + `{}]}`, // entries
		"\x00\xff{", // not JSON
	}
	for _, c := range corpus {
		f.Add([]byte(c))
	}
	dir := f.TempDir() // one per worker, its files rewritten by every input
	rd := filepath.Join(dir, statusfiles.DirName, "rt_ws.a")
	if err := os.MkdirAll(rd, 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []string{filepath.Join(rd, statusfiles.FileName), filepath.Join(dir, statusfiles.DirName, statusfiles.FileName)} {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := statusfiles.ReadRuntime(dir, "rt_ws.a"); err == nil {
			if r.Schema < 1 || r.Schema > statusfiles.SchemaVersion {
				t.Fatalf("schema %d read", r.Schema)
			}
			rt, tr := r.Record()
			if rt.RuntimeID != r.RuntimeID || tr != nil && tr.Prompt != "" {
				t.Fatalf("record %+v %+v", rt, tr)
			}
		}
		if fl, err := statusfiles.ReadFleet(dir); err == nil && (fl.Schema < 1 || fl.Schema > statusfiles.SchemaVersion) {
			t.Fatalf("fleet schema %d read", fl.Schema)
		}
	})
}
