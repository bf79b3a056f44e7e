package detector

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acarl005/stripansi"
)

func BenchmarkClassify(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "screens", "codex_busy_reconnecting.ansi"))
	if err != nil {
		b.Fatal(err)
	}
	p := defaultPacks(b)["codex"]
	b.Run("Classify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Classify(p, string(data))
		}
	})
	// The obvious alternative: strip the whole screen and run every cue over it.
	b.Run("StripAndGrepAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := stripansi.Strip(string(data))
			for _, cs := range [][]Cue{p.Confirm, p.Busy, p.Error, p.Ready} {
				for k := range cs {
					cs[k].re.MatchString(s)
				}
			}
		}
	})
}
