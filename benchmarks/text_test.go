package benchmarks

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/inject"
)

var (
	prompt80 = "Please fix the failing test in store/db_test.go and rerun `go test ./...` now."
	prompt5K = strings.Repeat("Review the diff below; check quoting of 'args', $VARS and #{fmt}.\n", 75)
	// tuiChunk is a 2.8 KB %output chunk as a TUI paints it: SGR, cursor moves, OSC.
	tuiChunk = makeChunk(2800)
)

func makeChunk(n int) []byte {
	line := "\x1b[12;3H\x1b[38;5;245m│\x1b[0m \x1b[1mRunning\x1b[22m go test ./inject/ \x1b[2m(12s)\x1b[0m\x1b[K\r\n" +
		"\x1b]0;codex: working\x07  ✓ TestSanitize \x1b[32mok\x1b[39m  日本\r\n"
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(line)
	}
	return b.Bytes()[:n]
}

func benchSanitizeWrap(b *testing.B, p string) {
	e := inject.Envelope{ID: "trig-0001", Thread: "thread-42", Reason: "ci", AckHint: true}
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		s, err := inject.Sanitize(p, 0)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = inject.TypeCommands("%1", 4242, e.Wrap(s), "nudge-1")
	}
}

func BenchmarkSanitizeWrapType80(b *testing.B) { benchSanitizeWrap(b, prompt80) }
func BenchmarkSanitizeWrapType5K(b *testing.B) { benchSanitizeWrap(b, prompt5K) }

func BenchmarkSanitize5KDirty(b *testing.B) {
	p := strings.ReplaceAll(prompt5K, "\n", "\r\n\t")
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := inject.Sanitize(p, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlain(b *testing.B) {
	dst := make([]byte, 0, len(tuiChunk))
	var p nudge.Plain
	b.ReportAllocs()
	b.SetBytes(int64(len(tuiChunk)))
	for b.Loop() {
		dst = p.Write(dst[:0], tuiChunk)
	}
}

// ansiRE is the obvious alternative to Plain (not streaming: it cannot carry a
// sequence split across chunks).
var ansiRE = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])`)

func BenchmarkPlainRegexp(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(tuiChunk)))
	for b.Loop() {
		_ = ansiRE.ReplaceAll(tuiChunk, nil)
	}
}

func BenchmarkMatcherFeed(b *testing.B) {
	var m ack.Matcher
	n := 0
	found := func([]byte) { n++ }
	chunk := append(append([]byte{}, tuiChunk[:2700]...), "\x1b[1mACK_TRIGGER:trig-0001\x1b[0m\r\n"...)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		m.Feed(chunk, found)
	}
	if n == 0 {
		b.Fatal("marker not found")
	}
}

// BenchmarkMatcherNaive is the obvious alternative: strip, then search the text
// (misses a marker split across chunks unless text is kept between calls).
func BenchmarkMatcherNaive(b *testing.B) {
	chunk := append(append([]byte{}, tuiChunk[:2700]...), "\x1b[1mACK_TRIGGER:trig-0001\x1b[0m\r\n"...)
	dst := make([]byte, 0, len(chunk))
	var p nudge.Plain
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		dst = p.Write(dst[:0], chunk)
		if bytes.Index(dst, []byte(ack.Marker)) < 0 {
			b.Fatal("marker not found")
		}
	}
}
