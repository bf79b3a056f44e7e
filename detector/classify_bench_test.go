package detector

import (
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkClassifyScreens: one readiness look's classification (ClassifyScreen) of every
// recorded -e screen of testdata/screens, each with its agent's pack, in turn.
func BenchmarkClassifyScreens(b *testing.B) {
	files, err := filepath.Glob(filepath.Join("testdata", "screens", "*.ansi"))
	if err != nil {
		b.Fatal(err)
	}
	packs := defaultPacks(b)
	type sample struct {
		p    *Pack
		text string
	}
	var screens []sample
	for _, f := range files {
		agent, _, _ := strings.Cut(filepath.Base(f), "_")
		p := packs[agent]
		if p == nil {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		screens = append(screens, sample{p, string(data)})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := screens[i%len(screens)]
		ClassifyScreen(s.p, Screen{Text: s.text, CursorY: -1})
		i++
	}
}
